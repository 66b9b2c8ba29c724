"""glibc allocator settings for the engine's window-sized numpy temporaries.

A window of 700 channels is a ~160 KB array, and judging one makes dozens of them. With glibc's defaults each of
those is mapped and unmapped (or the heap top trimmed and grown again), so page faults cost more than the arithmetic:
features of one window take 715 µs by default and 315 µs with a fixed 1 MiB mmap threshold and a trim threshold
of a few MiB (`reveal bench engine` shows the whole window). The memory kept for reuse is per process, not per host,
and a long-running worker hands what it holds free back to the system every few seconds (`release_free_memory`).
Between those, each thread's arena keeps up to the trim threshold: with 32 MiB a worker of 150 hosts of 700 channels
held 2.0 MB per host, with 4 MiB 1.75 MB at the same CPU and the same 0.74 ms per host-window in the engine (with
64 KiB 1.78 MB, and 0.80 ms; `reveal bench pipeline --hosts 150 --duration 120`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
SETTINGS = {"MALLOC_MMAP_THRESHOLD_": (M_MMAP_THRESHOLD, 1 << 20),
            "MALLOC_TRIM_THRESHOLD_": (M_TRIM_THRESHOLD, 4 << 20)}


def tune_allocator(environment: dict[str, str] | None = None) -> dict[str, int]:
    """Apply SETTINGS through mallopt(3), except those the environment sets itself; returns what was applied
    (nothing where the C library is not glibc)."""
    environment = os.environ if environment is None else environment
    mallopt = _mallopt()
    if mallopt is None:
        return {}
    applied = {}
    for variable, (option, value) in SETTINGS.items():
        if variable in environment:
            continue
        if mallopt(option, value) == 1:
            applied[variable] = value
        else:
            log.debug("mallopt(%d, %d) refused; %s stays at glibc's default", option, value, variable)
    return applied


def release_free_memory() -> bool:
    """Return the free memory of every arena to the system (malloc_trim(3)); False where that is not glibc's or
    nothing was released. Takes a few milliseconds for a worker of a few hundred megabytes."""
    malloc_trim = _glibc_function("malloc_trim", (ctypes.c_size_t,))
    return malloc_trim is not None and malloc_trim(0) == 1


def _mallopt():
    """glibc's mallopt, or None where this process does not run on glibc."""
    return _glibc_function("mallopt", (ctypes.c_int, ctypes.c_int))


def _glibc_function(name: str, argtypes: tuple):
    library = ctypes.util.find_library("c")
    if library is None:
        return None
    try:
        function = getattr(ctypes.CDLL(library), name)
    except (OSError, AttributeError):
        return None
    function.argtypes, function.restype = argtypes, ctypes.c_int
    return function
