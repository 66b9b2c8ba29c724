"""The only code that touches perf_event_open(2): struct perf_event_attr, the syscall through ctypes, and reads.

Each read is one read(2) per counter of (value, time_enabled, time_running).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
from typing import Protocol

from producers.collectors.perf_events import PerfEvent

# include/uapi/linux/perf_event.h
PERF_FORMAT_TOTAL_TIME_ENABLED, PERF_FORMAT_TOTAL_TIME_RUNNING = 1 << 0, 1 << 1
PERF_FLAG_FD_CLOEXEC = 1 << 3
PERF_ATTR_SIZE_VER5 = 112
ATTR_FLAG_EXCLUDE_GUEST = 1 << 20  # bit 20 of the flags word; bit 0 is disabled, bit 1 inherit

# Generic syscall tables (aarch64, riscv64) share 241; x86-64 has its own.
PERF_EVENT_OPEN_SYSCALL = {"x86_64": 298, "amd64": 298, "aarch64": 241, "arm64": 241, "riscv64": 241}


class PerfEventAttr(ctypes.Structure):
    """struct perf_event_attr up to PERF_ATTR_SIZE_VER5; older kernels accept it since the bytes they lack are 0."""

    _fields_ = [
        ("type", ctypes.c_uint32), ("size", ctypes.c_uint32), ("config", ctypes.c_uint64),
        ("sample_period", ctypes.c_uint64), ("sample_type", ctypes.c_uint64), ("read_format", ctypes.c_uint64),
        ("flags", ctypes.c_uint64),  # the bitfield word: disabled, inherit, ..., exclude_guest (bit 20)
        ("wakeup_events", ctypes.c_uint32), ("bp_type", ctypes.c_uint32),
        ("config1", ctypes.c_uint64), ("config2", ctypes.c_uint64), ("branch_sample_type", ctypes.c_uint64),
        ("sample_regs_user", ctypes.c_uint64), ("sample_stack_user", ctypes.c_uint32), ("clockid", ctypes.c_int32),
        ("sample_regs_intr", ctypes.c_uint64), ("aux_watermark", ctypes.c_uint32),
        ("sample_max_stack", ctypes.c_uint16), ("reserved_2", ctypes.c_uint16),
    ]


class Opener(Protocol):
    """What PerfCollector needs from the kernel; tests pass a scripted one."""

    def open(self, event: PerfEvent, cpu: int) -> int: ...

    def read(self, fd: int) -> tuple[int, int, int]: ...

    def close(self, fd: int) -> None: ...


class PerfEventOpener:
    """The only code that touches perf_event_open: opens one counting event on one CPU and reads it.

    exclude_guest stays 0 by default: a per-CPU counter describes everything the CPU did, and /proc/stat also
    counts the time it spent running KVM guests.
    """

    _COUNTS = struct.Struct("=3Q")

    def __init__(self, exclude_guest: bool = False, machine: str | None = None):
        self.exclude_guest = exclude_guest
        self.machine = machine or platform.machine()
        self.syscall_number = PERF_EVENT_OPEN_SYSCALL.get(self.machine)
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._libc.syscall.restype = ctypes.c_long

    def attr(self, event: PerfEvent) -> PerfEventAttr:
        """The attributes of a free-running counting event that reports its enabled and running times."""
        attr = PerfEventAttr(type=event.type, size=ctypes.sizeof(PerfEventAttr), config=event.config,
                             config1=event.config1)
        attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING
        attr.flags = ATTR_FLAG_EXCLUDE_GUEST if self.exclude_guest else 0  # disabled=0, inherit=0
        return attr

    def open(self, event: PerfEvent, cpu: int) -> int:
        """A file descriptor counting `event` on `cpu` for every task; OSError with the kernel's errno."""
        if self.syscall_number is None:
            raise OSError(errno.ENOSYS, f"no perf_event_open syscall number known for {self.machine}")
        attr = self.attr(event)
        fd = self._libc.syscall(ctypes.c_long(self.syscall_number), ctypes.byref(attr), ctypes.c_long(-1),
                                ctypes.c_long(cpu), ctypes.c_long(-1), ctypes.c_ulong(PERF_FLAG_FD_CLOEXEC))
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, f"perf_event_open({event.name}, cpu {cpu}): {os.strerror(code)}")
        return fd

    def read(self, fd: int) -> tuple[int, int, int]:
        """(value, time_enabled, time_running); perf fds cannot seek (pread gives ESPIPE), so plain read(2)."""
        data = os.read(fd, self._COUNTS.size)
        if len(data) != self._COUNTS.size:
            raise OSError(errno.EIO, f"perf counter read returned {len(data)} bytes, {self._COUNTS.size} expected")
        return self._COUNTS.unpack(data)

    def close(self, fd: int) -> None:
        os.close(fd)
