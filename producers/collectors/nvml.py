"""NVIDIA GPUs through NVML: utilisation, memory, power, clocks, PCIe, throttling, XID events, NVLink, ECC.

The collectors are exercised through an injected NVML module in tests (tests/producers/collectors/test_nvml.py);
CI has no GPU. They were run against a real NVIDIA H100 80GB (driver 580.159.04): 21 fast and 15 slow channels per
GPU, each fast read ~0.3 ms of CPU once the energy total moved to the slow source.

Two sources share one device enumeration scheme: `NvmlCollector` reads the cheap, fast-moving values every 0.2 s;
`NvmlSlowCollector` reads once a second what is slow to ask (PCIe throughput blocks ~20 ms per call, the energy
total spends ~3 ms of CPU) or slow to change (ECC, retired pages, remapped rows, maximum link, processes). A query
that a GPU answers NOT_SUPPORTED the first time is never asked of that GPU again; any other NVML error makes its
channels NaN for that read. The query tables are in nvml_queries.py, what both sources share in nvml_source.py.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

from producers.collectors.nvml_queries import FAST_QUERIES, SLOW_QUERIES, SUBSYSTEM, Query
from producers.collectors.nvml_source import BoundQuery, Gpu, NvmlSource, handle_key

# Union members of nvmlValue_t, indexed by nvmlValueType_t.
FIELD_VALUE_MEMBERS = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")
# XID events read in one pass at most; a storm beyond this is drained over the following reads.
MAX_EVENTS_PER_READ = 256


class NvmlCollector(NvmlSource):
    """Per-GPU utilisation, memory, power, temperature, clocks, PCIe link, throttling, NVLink and XIDs."""

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
        self._xid_gpus[handle_key(gpu.handle)] = gpu

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
        gpu = self._xid_gpus.get(handle_key(event.device))
        if gpu is not None and event.eventType & self.nvml.nvmlEventTypeXidCriticalError:
            gpu.xid_errors += 1
            gpu.xid_last = int(event.eventData)

    def _put_xids(self, gpu: Gpu, xids_read: bool, out: dict[str, float]) -> None:
        """The GPU's XID count and last XID code, NaN when the events could not be read."""
        errors, last = (float(gpu.xid_errors), float(gpu.xid_last)) if xids_read else (math.nan, math.nan)
        self._put(out, "gpu.xid_errors", gpu.name, errors, SUBSYSTEM, "event", "errors")
        self._put(out, "gpu.xid_last", gpu.name, last, SUBSYSTEM, "gauge", "code")


class NvmlSlowCollector(NvmlSource):
    """Per-GPU PCIe throughput and energy (slow to ask), maximum link, ECC, retired pages, remapped rows, processes."""

    source = "nvml-slow"
    default_interval_s = 1.0
    queries = SLOW_QUERIES
