"""What both NVML sources share: NVML started lazily, GPUs enumerated once, and a query plan per GPU.

A query that a GPU answers NOT_SUPPORTED the first time is never asked of that GPU again; any other NVML error makes
its channels NaN for that read.
"""

from __future__ import annotations

import ctypes
import importlib
import logging
import math
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable

from producers.collectors.base import Collector
from producers.collectors.nvml_queries import SUBSYSTEM, Query

log = logging.getLogger(__name__)

NVML_LIBRARY = "libnvidia-ml.so.1"  # the driver's library, as pynvml loads it on Linux


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


def handle_key(handle: Any) -> Any:
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
            ctypes.CDLL(NVML_LIBRARY)  # a host without the driver's library never imports pynvml (~1 MB resident)
        except OSError as error:
            raise OSError(f"NVML cannot start: NVML Shared Library Not Found ({error})") from error
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
