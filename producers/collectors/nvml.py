"""NVIDIA GPUs through NVML: utilisation, memory, power, clocks, PCIe, throttling, XID events, NVLink, ECC.

The collectors are exercised through an injected NVML module in tests (tests/producers/test_nvml.py) and have not
been run against a real GPU in this repository's CI.

Two sources share one device enumeration scheme: `NvmlCollector` reads the cheap, fast-moving values every 0.2 s;
`NvmlSlowCollector` reads once a second what is slow to ask (PCIe throughput blocks ~20 ms per call) or slow to
change (ECC, retired pages, remapped rows, maximum link, processes). A query that a GPU answers NOT_SUPPORTED the
first time is never asked of that GPU again; any other NVML error makes its channels NaN for that read.
"""

from __future__ import annotations

import ctypes
import importlib
import logging
import math
import operator
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable

from producers.collectors.base import Collector

log = logging.getLogger(__name__)

SUBSYSTEM = "gpu"
# Bits of nvmlClocksThrottleReason* in nvml.h; a stable part of the NVML ABI.
THROTTLE_FLAGS = (("gpu.throttle_sw_power_cap", 0x04), ("gpu.throttle_hw_slowdown", 0x08),
                  ("gpu.throttle_sw_thermal_slowdown", 0x20), ("gpu.throttle_hw_thermal_slowdown", 0x40),
                  ("gpu.throttle_power_brake", 0x80))
# Union members of nvmlValue_t, indexed by nvmlValueType_t.
FIELD_VALUE_MEMBERS = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")
# XID events read in one pass at most; a storm beyond this is drained over the following reads.
MAX_EVENTS_PER_READ = 256
KIB = 1024


def _identity(answer: Any) -> Any:
    """The answer itself, for calls that return one number."""
    return answer


def _has_bit(bit: int, mask: int) -> bool:
    """Whether one reason bit is set in a throttle-reasons mask."""
    return bool(int(mask) & bit)


def _process_memory(processes: list) -> int:
    """Summed GPU memory of the processes whose usage NVML reports (None where it cannot, e.g. under WDDM)."""
    return sum(p.usedGpuMemory for p in processes if p.usedGpuMemory is not None)


@dataclass(frozen=True)
class Output:
    """One channel filled from a query's answer: pick the number, then scale it into the channel's unit."""

    metric: str
    kind: str
    unit: str
    pick: Callable[[Any], float] = _identity
    scale: float = 1.0

    def value(self, answer: Any) -> float:
        """The channel's value in its unit."""
        return float(self.pick(answer)) * self.scale


@dataclass(frozen=True)
class Query:
    """One NVML call per GPU (the handle, then NVML constants named in `constants`) and the channels it fills."""

    key: str
    function: str
    constants: tuple[str, ...]
    outputs: tuple[Output, ...]


def _query(key: str, function: str, *constants: str, outputs: tuple[Output, ...]) -> Query:
    """A query, with its NVML constants listed inline."""
    return Query(key, function, constants, outputs)


def _gauge(metric: str, unit: str, pick: Callable[[Any], float] = _identity, scale: float = 1.0) -> Output:
    """A gauge output."""
    return Output(metric, "gauge", unit, pick, scale)


FAST_QUERIES = (
    _query("utilization", "nvmlDeviceGetUtilizationRates",
           outputs=(_gauge("gpu.utilization", "%", operator.attrgetter("gpu")),
                    _gauge("gpu.memory_utilization", "%", operator.attrgetter("memory")))),
    _query("encoder", "nvmlDeviceGetEncoderUtilization",
           outputs=(_gauge("gpu.encoder_utilization", "%", operator.itemgetter(0)),)),
    _query("decoder", "nvmlDeviceGetDecoderUtilization",
           outputs=(_gauge("gpu.decoder_utilization", "%", operator.itemgetter(0)),)),
    _query("memory", "nvmlDeviceGetMemoryInfo",
           outputs=(_gauge("gpu.memory_used", "bytes", operator.attrgetter("used")),
                    _gauge("gpu.memory_free", "bytes", operator.attrgetter("free")),
                    Output("gpu.memory_total", "static", "bytes", operator.attrgetter("total")))),
    _query("power", "nvmlDeviceGetPowerUsage", outputs=(_gauge("gpu.power", "W", scale=1e-3),)),
    _query("energy", "nvmlDeviceGetTotalEnergyConsumption",
           outputs=(Output("gpu.energy", "counter", "J", scale=1e-3),)),
    _query("temperature", "nvmlDeviceGetTemperature", "NVML_TEMPERATURE_GPU",
           outputs=(_gauge("gpu.temperature", "celsius"),)),
    _query("clock_sm", "nvmlDeviceGetClockInfo", "NVML_CLOCK_SM", outputs=(_gauge("gpu.clock_sm", "MHz"),)),
    _query("clock_mem", "nvmlDeviceGetClockInfo", "NVML_CLOCK_MEM", outputs=(_gauge("gpu.clock_mem", "MHz"),)),
    _query("pcie_gen", "nvmlDeviceGetCurrPcieLinkGeneration", outputs=(_gauge("gpu.pcie_link_gen", "generation"),)),
    _query("pcie_width", "nvmlDeviceGetCurrPcieLinkWidth", outputs=(_gauge("gpu.pcie_link_width", "lanes"),)),
    _query("throttle", "nvmlDeviceGetCurrentClocksThrottleReasons",
           outputs=(_gauge("gpu.throttle_reasons", "bitmask"),
                    *(_gauge(metric, "flag", partial(_has_bit, bit)) for metric, bit in THROTTLE_FLAGS))),
    # Answered by NvmlCollector._nvlink_totals over the links found enabled at start: (TX KiB, RX KiB).
    _query("nvlink", "nvmlDeviceGetFieldValues",
           outputs=(Output("gpu.nvlink_tx_bytes", "counter", "bytes", operator.itemgetter(0), KIB),
                    Output("gpu.nvlink_rx_bytes", "counter", "bytes", operator.itemgetter(1), KIB))),
)


def _ecc(error_type: str, counter_type: str, metric: str) -> Query:
    """One total of ECC errors of one type (corrected or not) and lifetime (volatile or aggregate)."""
    return _query(metric, "nvmlDeviceGetTotalEccErrors", error_type, counter_type,
                  outputs=(Output(metric, "event", "errors"),))


def _retired(cause: str, metric: str) -> Query:
    """The number of pages retired for one cause (NVML lists their addresses)."""
    return _query(metric, "nvmlDeviceGetRetiredPages", cause, outputs=(Output(metric, "event", "pages", len),))


SLOW_QUERIES = (
    _query("pcie_tx", "nvmlDeviceGetPcieThroughput", "NVML_PCIE_UTIL_TX_BYTES",
           outputs=(_gauge("gpu.pcie_tx_throughput", "bytes/s", scale=KIB),)),
    _query("pcie_rx", "nvmlDeviceGetPcieThroughput", "NVML_PCIE_UTIL_RX_BYTES",
           outputs=(_gauge("gpu.pcie_rx_throughput", "bytes/s", scale=KIB),)),
    _query("pcie_gen_max", "nvmlDeviceGetMaxPcieLinkGeneration",
           outputs=(Output("gpu.pcie_link_gen_max", "static", "generation"),)),
    _query("pcie_width_max", "nvmlDeviceGetMaxPcieLinkWidth",
           outputs=(Output("gpu.pcie_link_width_max", "static", "lanes"),)),
    _ecc("NVML_MEMORY_ERROR_TYPE_CORRECTED", "NVML_VOLATILE_ECC", "gpu.ecc_corrected_volatile"),
    _ecc("NVML_MEMORY_ERROR_TYPE_UNCORRECTED", "NVML_VOLATILE_ECC", "gpu.ecc_uncorrected_volatile"),
    _ecc("NVML_MEMORY_ERROR_TYPE_CORRECTED", "NVML_AGGREGATE_ECC", "gpu.ecc_corrected_aggregate"),
    _ecc("NVML_MEMORY_ERROR_TYPE_UNCORRECTED", "NVML_AGGREGATE_ECC", "gpu.ecc_uncorrected_aggregate"),
    # Pre-Ampere GPUs retire pages; A100 and H100 remap rows instead and answer NOT_SUPPORTED here.
    _retired("NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS", "gpu.retired_pages_sbe"),
    _retired("NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR", "gpu.retired_pages_dbe"),
    _query("remapped_rows", "nvmlDeviceGetRemappedRows",
           outputs=(Output("gpu.remapped_rows_corrected", "event", "rows", operator.itemgetter(0)),
                    Output("gpu.remapped_rows_uncorrected", "event", "rows", operator.itemgetter(1)),
                    _gauge("gpu.remapped_rows_pending", "flag", operator.itemgetter(2)),
                    _gauge("gpu.remapped_rows_failure", "flag", operator.itemgetter(3)))),
    _query("processes", "nvmlDeviceGetComputeRunningProcesses",
           outputs=(_gauge("gpu.processes", "processes", len),
                    _gauge("gpu.process_memory_used", "bytes", _process_memory))),
)


@dataclass(frozen=True)
class BoundQuery:
    """A query bound to one GPU: the call to make and the channel names its outputs fill."""

    query: Query
    ask: Callable[[], Any]
    names: tuple[str, ...]


@dataclass
class Gpu:
    """One GPU by NVML index, with the queries still asked of it and the XID events seen since start."""

    index: int
    handle: Any
    plan: list[BoundQuery] = field(default_factory=list)
    answered: set[str] = field(default_factory=set)
    unsupported: set[str] = field(default_factory=set)
    nvlink_fields: list[tuple[int, int]] = field(default_factory=list)
    watches_xids: bool = False
    xid_errors: int = 0
    xid_last: int = 0

    @property
    def name(self) -> str:
        """The device name of its channels: gpu0, gpu1, … by NVML index."""
        return f"gpu{self.index}"


def _handle_key(handle: Any) -> Any:
    """A hashable identity for a device handle: the address behind a ctypes pointer, else the object itself."""
    try:
        return ctypes.cast(handle, ctypes.c_void_p).value
    except (ctypes.ArgumentError, TypeError):
        return handle


class NvmlSource(Collector):
    """What both NVML sources share: lazy NVML start, GPU enumeration, and per-GPU query plans."""

    queries: tuple[Query, ...] = ()

    def __init__(self, procfs="/proc", sysfs="/sys", nvml: Any = None):
        super().__init__(procfs, sysfs)
        self._injected = nvml
        self.nvml: Any = None
        self.gpus: list[Gpu] | None = None
        self._initialised = False
        self._unavailable: OSError | None = None
        self._errors: tuple[type[BaseException], ...] = ()
        self._unsupported_codes: frozenset[int] = frozenset()

    def collect(self) -> dict[str, float]:
        """Every supported channel of every GPU; OSError when NVML cannot start."""
        out: dict[str, float] = {}
        for gpu in self._started():
            self._read_gpu(gpu, out)
        return out

    def close(self) -> None:
        """Shut NVML down (it counts starts, so the other NVML source keeps its own)."""
        if self._initialised:
            self._initialised = False
            self._call_quietly("nvmlShutdown")

    def _started(self) -> list[Gpu]:
        """The GPUs, starting NVML on first use; OSError, every time, when NVML cannot start."""
        if self.gpus is None:
            if self._unavailable is not None:
                raise self._unavailable
            try:
                self._start()
            except OSError as error:
                self._unavailable = error
                raise
        return self.gpus

    def _start(self) -> None:
        """Start NVML, open every GPU and bind the queries each one is asked."""
        self.nvml = self._load()
        self._errors = (self.nvml.NVMLError, *self._mismatch_error())
        self._unsupported_codes = frozenset(getattr(self.nvml, name) for name in
                                            ("NVML_ERROR_NOT_SUPPORTED", "NVML_ERROR_FUNCTION_NOT_FOUND"))
        try:
            self.nvml.nvmlInit()
        except self.nvml.NVMLError as error:
            raise OSError(f"NVML cannot start: {error}") from error
        self._initialised = True
        gpus = self._enumerate()
        for gpu in gpus:
            self._discover(gpu)
            gpu.plan = [self._bind(query, gpu) for query in self.queries if query.key not in gpu.unsupported]
        self.gpus = gpus

    def _load(self) -> Any:
        """The injected NVML module, or pynvml imported now."""
        if self._injected is not None:
            return self._injected
        try:
            return importlib.import_module("pynvml")
        except ImportError as error:
            raise OSError(f"pynvml is not installed ({error})") from error

    def _mismatch_error(self) -> tuple[type[BaseException], ...]:
        """pynvml raises NVMLLibraryMismatchError, not NVMLError, when an unversioned function is missing."""
        mismatch = getattr(self.nvml, "NVMLLibraryMismatchError", None)
        return (mismatch,) if isinstance(mismatch, type) else ()

    def _enumerate(self) -> list[Gpu]:
        """Every GPU NVML can open; one it cannot open is left out and reported once."""
        try:
            count = self.nvml.nvmlDeviceGetCount()
        except self.nvml.NVMLError as error:
            self.close()
            raise OSError(f"NVML cannot count GPUs: {error}") from error
        gpus = [gpu for gpu in map(self._open, range(count)) if gpu is not None]
        if not gpus:
            self.close()
            raise OSError(f"NVML sees {count} GPUs and can open none")
        return gpus

    def _open(self, index: int) -> Gpu | None:
        """The GPU at one NVML index, or None (reported once) when NVML cannot open it."""
        try:
            return Gpu(index, self.nvml.nvmlDeviceGetHandleByIndex(index))
        except self.nvml.NVMLError as error:
            self._warn_once(f"gpu{index}:handle", "%s: cannot open GPU %d (%s); it is left out", self.source, index,
                            error)
            return None

    def _discover(self, gpu: Gpu) -> None:
        """Find once what a GPU has beyond the plain queries; subclasses mark what it lacks as unsupported."""

    def _bind(self, query: Query, gpu: Gpu) -> BoundQuery:
        """The call of one query on one GPU, with its constants resolved and its channels registered."""
        function = getattr(self.nvml, query.function)
        constants = tuple(getattr(self.nvml, name) for name in query.constants)
        names = tuple(self._register(o.metric, gpu.name, SUBSYSTEM, o.kind, o.unit) for o in query.outputs)
        return BoundQuery(query, partial(function, gpu.handle, *constants), names)

    def _read_gpu(self, gpu: Gpu, out: dict[str, float]) -> None:
        """Ask one GPU every query in its plan; a failed query costs only its own channels."""
        for bound in gpu.plan:
            try:
                answer = bound.ask()
            except self._errors as error:
                self._failed(gpu, bound, error, out)
                continue
            gpu.answered.add(bound.query.key)
            for name, output in zip(bound.names, bound.query.outputs):
                out[name] = output.value(answer)

    def _failed(self, gpu: Gpu, bound: BoundQuery, error: BaseException, out: dict[str, float]) -> None:
        """An unsupported query is dropped for this GPU if it never answered; any other failure reads NaN."""
        key = bound.query.key
        if self._is_unsupported(error) and key not in gpu.answered:
            gpu.unsupported.add(key)
            gpu.plan = [other for other in gpu.plan if other is not bound]
            log.info("%s: %s does not support %s (%s); not asked again", self.source, gpu.name, key, error)
            return
        self._warn_once(f"{gpu.name}:{key}", "%s: %s %s failed (%s); its channels read NaN", self.source, gpu.name,
                        key, error)
        out.update(dict.fromkeys(bound.names, math.nan))

    def _is_unsupported(self, error: BaseException) -> bool:
        """NOT_SUPPORTED, or a function this driver lacks (which pynvml may raise as NVMLLibraryMismatchError)."""
        if not isinstance(error, self.nvml.NVMLError):
            return True
        return error.value in self._unsupported_codes

    def _call_quietly(self, function: str, *args: Any) -> None:
        """Call an NVML function whose failure only merits a log line (releasing resources at close)."""
        try:
            getattr(self.nvml, function)(*args)
        except self.nvml.NVMLError as error:
            log.warning("%s: %s failed (%s)", self.source, function, error)


class NvmlCollector(NvmlSource):
    """Per-GPU utilisation, memory, power, energy, temperature, clocks, PCIe link, throttling, NVLink and XIDs."""

    source = "nvml"
    default_interval_s = 0.2
    queries = FAST_QUERIES

    def __init__(self, procfs="/proc", sysfs="/sys", nvml: Any = None):
        super().__init__(procfs, sysfs, nvml)
        self._event_set: Any = None
        self._xid_gpus: dict[Any, Gpu] = {}

    def collect(self) -> dict[str, float]:
        """Every supported channel of every GPU, each followed by its XID count and last XID."""
        out: dict[str, float] = {}
        gpus = self._started()
        xids_read = self._drain_xid_events()
        for gpu in gpus:
            self._read_gpu(gpu, out)
            if gpu.watches_xids:
                self._put_xids(gpu, xids_read, out)
        return out

    def close(self) -> None:
        """Free the XID event set, then shut NVML down."""
        if self._event_set is not None and self._initialised:
            self._call_quietly("nvmlEventSetFree", self._event_set)
        self._event_set = None
        super().close()

    def _start(self) -> None:
        """Start as every NVML source does, then watch for XID events."""
        super()._start()
        self._watch_xids()

    def _discover(self, gpu: Gpu) -> None:
        """The NVLink fields to read: TX then RX of every enabled link; no enabled link drops the NVLink query."""
        links = self._enabled_nvlinks(gpu)
        tx, rx = self.nvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, self.nvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX
        gpu.nvlink_fields = [(tx, link) for link in links] + [(rx, link) for link in links]
        if not links:
            gpu.unsupported.add("nvlink")

    def _enabled_nvlinks(self, gpu: Gpu) -> list[int]:
        """Links reporting enabled; the first NOT_SUPPORTED ends the search (a GPU without NVLink gives it at once)."""
        links = []
        for link in range(self.nvml.NVML_NVLINK_MAX_LINKS):
            try:
                state = self.nvml.nvmlDeviceGetNvLinkState(gpu.handle, link)
            except self.nvml.NVMLError as error:
                if self._is_unsupported(error):
                    break
                continue  # links past the GPU's own count answer INVALID_ARGUMENT
            if state == self.nvml.NVML_FEATURE_ENABLED:
                links.append(link)
        return links

    def _bind(self, query: Query, gpu: Gpu) -> BoundQuery:
        """As every NVML source binds, except NVLink, whose answer is summed over the GPU's links."""
        bound = super()._bind(query, gpu)
        if query.key == "nvlink":
            return BoundQuery(query, partial(self._nvlink_totals, gpu), bound.names)
        return bound

    def _nvlink_totals(self, gpu: Gpu) -> tuple[float, float]:
        """Data sent and received over all enabled links, in KiB; an error on any link fails the pair."""
        values = self.nvml.nvmlDeviceGetFieldValues(gpu.handle, gpu.nvlink_fields)
        for value in values:
            if value.nvmlReturn != self.nvml.NVML_SUCCESS:
                raise self.nvml.NVMLError(value.nvmlReturn)
        numbers = [getattr(value.value, FIELD_VALUE_MEMBERS[value.valueType]) for value in values]
        half = len(numbers) // 2
        return sum(numbers[:half]), sum(numbers[half:])

    def _watch_xids(self) -> None:
        """Register every GPU for critical XID events in one event set; a GPU that cannot gets no XID channels."""
        try:
            self._event_set = self.nvml.nvmlEventSetCreate()
        except self.nvml.NVMLError as error:
            self._warn_once("xid", "%s: cannot create an NVML event set (%s); no XID channels", self.source, error)
            return
        for gpu in self.gpus:
            self._register_xids(gpu)

    def _register_xids(self, gpu: Gpu) -> None:
        """Add one GPU to the event set; one that cannot report XIDs is reported once."""
        try:
            self.nvml.nvmlDeviceRegisterEvents(gpu.handle, self.nvml.nvmlEventTypeXidCriticalError,
                                               self._event_set)
        except self.nvml.NVMLError as error:
            self._warn_once(f"{gpu.name}:xid", "%s: %s cannot report XID events (%s)", self.source, gpu.name, error)
            return
        gpu.watches_xids = True
        self._xid_gpus[_handle_key(gpu.handle)] = gpu

    def _drain_xid_events(self) -> bool:
        """Count the XID events pending now, without waiting; False when NVML failed while reading them."""
        if self._event_set is None:
            return True
        for _ in range(MAX_EVENTS_PER_READ):
            try:
                event = self.nvml.nvmlEventSetWait(self._event_set, 0)
            except self.nvml.NVMLError as error:
                return self._drained(error)
            self._count_xid(event)
        return True

    def _drained(self, error: BaseException) -> bool:
        """TIMEOUT means no event is left; anything else is a failed read, reported once."""
        if getattr(error, "value", None) == self.nvml.NVML_ERROR_TIMEOUT:
            return True
        self._warn_once("xid:wait", "%s: reading XID events failed (%s); XID channels read NaN", self.source, error)
        return False

    def _count_xid(self, event: Any) -> None:
        """Count one critical XID event against its GPU and keep its code."""
        gpu = self._xid_gpus.get(_handle_key(event.device))
        if gpu is not None and event.eventType & self.nvml.nvmlEventTypeXidCriticalError:
            gpu.xid_errors += 1
            gpu.xid_last = int(event.eventData)

    def _put_xids(self, gpu: Gpu, xids_read: bool, out: dict[str, float]) -> None:
        """The GPU's XID count and last XID code, NaN when the events could not be read."""
        errors, last = (float(gpu.xid_errors), float(gpu.xid_last)) if xids_read else (math.nan, math.nan)
        self._put(out, "gpu.xid_errors", gpu.name, errors, SUBSYSTEM, "event", "errors")
        self._put(out, "gpu.xid_last", gpu.name, last, SUBSYSTEM, "gauge", "code")


class NvmlSlowCollector(NvmlSource):
    """Per-GPU PCIe throughput (slow to ask), maximum link, ECC, retired pages, remapped rows and processes."""

    source = "nvml-slow"
    default_interval_s = 1.0
    queries = SLOW_QUERIES
