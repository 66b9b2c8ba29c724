"""Per-CPU PMU counters (cycles, instructions, cache and stall events) through perf_event_open(2), via ctypes.

Every event is opened once per online CPU (pid=-1, counting whatever runs there) and kept open; each read is one
read(2) per counter of (value, time_enabled, time_running), and the value is scaled by enabled / running because
the kernel multiplexes more events than the PMU has counters. Channels are cumulative counters
`pmu.<event>.cpuN`; rates are computed downstream like every other counter.

Which events: the generic hardware events most PMU drivers map (cycles, instructions, cache references and misses,
branch misses, front- and back-end stalls, last-level-cache load misses), plus a thin per-vendor table of raw events
from the paper's Appendix A chosen by the vendor in /proc/cpuinfo. An event the kernel refuses on the first online
CPU is dropped on every CPU and named once in one log line; when no event opens, the source is unavailable and
`read()` raises OSError saying why. The raw encodings are those of Intel Skylake and later and of AMD Zen; the
kernel accepts a raw config on any model, so on another generation the same number may count a different event.

Verified on the development VM (Linux 6.18, x86-64 AMD guest without a virtual PMU, perf_event_paranoid 2, root):
the real syscall path (struct layout, syscall number 298, read format, fd lifetime) with the software events
cpu-clock, context-switches, cpu-migrations, page-faults and major-faults; there every hardware, cache and raw
event was refused with ENOENT, which the software fallback and the unavailability message were checked against;
run as uid 65534 without capabilities, every event was refused with EACCES and the message named paranoid level 2.
Verified only through a fake opener: the hardware, cache and raw vendor events, their encodings, and the scaling of
multiplexed counters (a VM without a PMU never multiplexes). The aarch64 syscall number is untested.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import platform
import struct
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Protocol

import numpy as np

from producers.collectors.base import Collector, Reading

log = logging.getLogger(__name__)

# include/uapi/linux/perf_event.h
PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE, PERF_TYPE_HW_CACHE, PERF_TYPE_RAW = 0, 1, 3, 4
PERF_FORMAT_TOTAL_TIME_ENABLED, PERF_FORMAT_TOTAL_TIME_RUNNING = 1 << 0, 1 << 1
PERF_FLAG_FD_CLOEXEC = 1 << 3
PERF_ATTR_SIZE_VER5 = 112
ATTR_FLAG_EXCLUDE_GUEST = 1 << 20  # bit 20 of the flags word; bit 0 is disabled, bit 1 inherit
PERF_COUNT_HW_CACHE_LL, PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_MISS = 2, 0, 1

# Generic syscall tables (aarch64, riscv64) share 241; x86-64 has its own.
PERF_EVENT_OPEN_SYSCALL = {"x86_64": 298, "amd64": 298, "aarch64": 241, "arm64": 241, "riscv64": 241}
# Apple cores report an implementer but have no PMUv3, so the Arm common event numbers mean nothing there.
ARM_IMPLEMENTERS_WITHOUT_PMUV3 = frozenset({"0x61"})


@dataclass(frozen=True)
class PerfEvent:
    """One event as perf_event_open takes it; `name` is perf's name, the channel uses it with '.' and '-' as '_'."""

    name: str
    type: int
    config: int
    config1: int = 0
    unit: str = "events"

    @property
    def metric(self) -> str:
        """The channel metric, e.g. 'pmu.cycle_activity_stalls_l3_miss' or 'pmu.sw_cpu_clock'."""
        stem = self.name.lower().replace(".", "_").replace("-", "_")
        return f"pmu.sw_{stem}" if self.type == PERF_TYPE_SOFTWARE else f"pmu.{stem}"


def _hardware(name: str, config: int) -> PerfEvent:
    return PerfEvent(name, PERF_TYPE_HARDWARE, config)


def _raw(name: str, event: int, umask: int = 0, cmask: int = 0) -> PerfEvent:
    """A raw x86 event-select encoding: event bits 0-7, unit mask bits 8-15, counter mask bits 24-31."""
    return PerfEvent(name, PERF_TYPE_RAW, event | umask << 8 | cmask << 24)


# PERF_COUNT_HW_* numbers; the kernel maps each to this CPU's own event or refuses it (ENOENT) when it has none.
GENERIC_EVENTS = (
    _hardware("cycles", 0), _hardware("instructions", 1), _hardware("cache-references", 2),
    _hardware("cache-misses", 3), _hardware("branch-misses", 5), _hardware("stalled-cycles-frontend", 7),
    _hardware("stalled-cycles-backend", 8),
    PerfEvent("LLC-load-misses", PERF_TYPE_HW_CACHE,
              PERF_COUNT_HW_CACHE_LL | PERF_COUNT_HW_CACHE_OP_READ << 8 | PERF_COUNT_HW_CACHE_RESULT_MISS << 16),
)

VENDOR_EVENTS = {
    # Intel SDM Vol. 3B "Performance Monitoring Events", Skylake microarchitecture core event table (the same
    # encodings in Intel's perfmon tables for Ice Lake and Sapphire Rapids): CYCLE_ACTIVITY.STALLS_L3_MISS A3H/06H
    # with CMask 6, MEM_LOAD_RETIRED.L3_MISS D1H/20H, MEM_INST_RETIRED.ALL_LOADS D0H/81H, .ALL_STORES D0H/82H.
    "intel": (
        _raw("cycle_activity.stalls_l3_miss", 0xA3, 0x06, cmask=6),
        _raw("mem_load_retired.l3_miss", 0xD1, 0x20),
        _raw("mem_inst_retired.all_loads", 0xD0, 0x81),
        _raw("mem_inst_retired.all_stores", 0xD0, 0x82),
    ),
    # AMD PPR for Family 17h (Zen, Zen 2; e.g. pub. 56176), core PMC events: PMCx029 LsDispatch with unit mask
    # bit 0 LdDispatch and bit 1 StoreDispatch, PMCx040 LsDcAccesses.
    "amd": (
        _raw("ls_dispatch.ld_dispatch", 0x29, 0x01),
        _raw("ls_dispatch.store_dispatch", 0x29, 0x02),
        _raw("ls_dc_accesses", 0x40, 0x00),
    ),
    # Arm ARM for A-profile (DDI 0487), PMUv3 common event numbers, taken by the armv8 PMU driver as raw configs:
    # 0x03 L1D_CACHE_REFILL, 0x23 STALL_FRONTEND, 0x24 STALL_BACKEND, 0x37 LL_CACHE_MISS_RD (Armv8.1 and later).
    "arm": (
        PerfEvent("stall_backend", PERF_TYPE_RAW, 0x24),
        PerfEvent("stall_frontend", PERF_TYPE_RAW, 0x23),
        PerfEvent("ll_cache_miss_rd", PERF_TYPE_RAW, 0x37),
        PerfEvent("l1d_cache_refill", PERF_TYPE_RAW, 0x03),
    ),
}

# PERF_COUNT_SW_*: counted by the kernel itself, so they open in a VM without a virtual PMU.
SOFTWARE_EVENTS = (
    PerfEvent("cpu-clock", PERF_TYPE_SOFTWARE, 0, unit="ns"),
    PerfEvent("context-switches", PERF_TYPE_SOFTWARE, 3),
    PerfEvent("cpu-migrations", PERF_TYPE_SOFTWARE, 4),
    PerfEvent("page-faults", PERF_TYPE_SOFTWARE, 2),
    PerfEvent("major-faults", PERF_TYPE_SOFTWARE, 6),
)

_REASONS = {
    errno.ENOENT: "the kernel has no PMU event for them, as in a VM without a virtual PMU",
    errno.ENODEV: "the kernel has no PMU for this CPU",
    errno.EOPNOTSUPP: "the PMU cannot count them in per-CPU mode",
    errno.EINVAL: "the kernel rejected the event attributes",
    errno.ENOSYS: "this kernel has no perf events (CONFIG_PERF_EVENTS) or no syscall number is known for it",
    errno.EPERM: "a seccomp profile or lockdown forbids perf_event_open; run with CAP_PERFMON outside it",
}


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


def parse_cpu_list(text: str) -> list[int]:
    """The CPUs of a kernel CPU list such as '0-3,8,10-11', in ascending order.

    >>> parse_cpu_list("0-3,8,10-11\\n")
    [0, 1, 2, 3, 8, 10, 11]
    """
    cpus: set[int] = set()
    for part in filter(None, text.strip().split(",")):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return sorted(cpus)


def cpu_vendor(cpuinfo: str) -> str:
    """'intel', 'amd' or 'arm' from /proc/cpuinfo text; '' for any other CPU, which gets the generic events only."""
    fields: dict[str, str] = {}
    for key, value in _cpuinfo_pairs(cpuinfo):
        fields.setdefault(key, value)  # the first processor's; the vendor is the same on every one
    vendor = {"GenuineIntel": "intel", "AuthenticAMD": "amd"}.get(fields.get("vendor_id", ""), "")
    implementer = fields.get("CPU implementer", "").lower()
    if not vendor and implementer and implementer not in ARM_IMPLEMENTERS_WITHOUT_PMUV3:
        return "arm"
    return vendor


def _cpuinfo_pairs(cpuinfo: str) -> Iterable[tuple[str, str]]:
    """(key, value) of every 'key : value' line, first processor first."""
    for line in cpuinfo.splitlines():
        key, colon, value = line.partition(":")
        if colon:
            yield key.strip(), value.strip()


def default_events(cpuinfo: str) -> tuple[PerfEvent, ...]:
    """The generic hardware events and the vendor's raw events."""
    return GENERIC_EVENTS + VENDOR_EVENTS.get(cpu_vendor(cpuinfo), ())


@dataclass(frozen=True)
class OpenedCounter:
    """One open event on one CPU."""

    name: str
    fd: int


class PerfCollector(Collector):
    """Cumulative PMU event counts per CPU, scaled for multiplexing; events the kernel refuses are left out.

    `software_fallback` (off by default) counts the kernel's software events when no hardware event opens, so a
    VM without a virtual PMU still reports `pmu.sw_*` channels. It is off because those channels restate
    /proc/stat and /proc/vmstat (CPU time, context switches, faults) rather than the PMU signals the detectors
    use, and because a host without a PMU should lack the `pmu.*` source and say so, not look as if it had one.
    """

    source = "perf_event_open"
    default_interval_s = 0.1

    def __init__(self, procfs: str | Path = "/proc", sysfs: str | Path = "/sys", opener: Opener | None = None,
                 events: Iterable[PerfEvent] | None = None, software_fallback: bool = False):
        super().__init__(procfs, sysfs)
        self._opener = opener if opener is not None else PerfEventOpener()
        self._requested = tuple(events) if events is not None else None
        self._software_fallback = software_fallback
        self._counters: list[OpenedCounter] | None = None
        self._names_tuple: tuple[str, ...] = ()
        self._unavailable: tuple[int, str] | None = None  # (errno, why), decided at the first read

    def read(self) -> Reading:
        if self._counters is None:
            self._open_counters()
        if self._unavailable is not None:
            raise OSError(*self._unavailable)
        values = np.fromiter(map(self._scaled, self._counters), dtype=np.float64, count=len(self._counters))
        return Reading(self._names_tuple, values)

    def collect(self) -> dict[str, float]:
        reading = self.read()
        return dict(zip(reading.names, reading.values.tolist()))

    def close(self) -> None:
        for counter in self._counters or ():
            self._opener.close(counter.fd)
        self._counters = None

    def _scaled(self, counter: OpenedCounter) -> float:
        """value × enabled / running: the estimate for a multiplexed counter; 0 if it never ran, NaN if unreadable."""
        try:
            value, enabled, running = self._opener.read(counter.fd)
        except OSError as error:  # one unreadable counter costs one channel
            self._warn_once(counter.name, "%s: cannot read %s (%s); the channel reads NaN", self.source,
                            counter.name, error)
            return float("nan")
        return value * enabled / running if running else 0.0

    def _open_counters(self) -> None:
        """Open every event on every online CPU, once; record why the source is unavailable if none opens."""
        cpus = parse_cpu_list((self.sysfs / "devices/system/cpu/online").read_text())
        if not cpus:
            raise OSError(errno.ENODEV, f"no online CPU listed in {self.sysfs / 'devices/system/cpu/online'}")
        counters, refused = self._open_events(self._events(), cpus)
        if counters:
            self._log_left_out(refused, cpus[0])
        elif self._software_fallback:
            counters = self._open_software_fallback(refused, cpus)
        else:
            self._unavailable = (_most_common(refused) or errno.ENOENT,
                                 f"perf_event_open refused every PMU event ({self._reason(refused)})")
        self._counters = counters
        self._names_tuple = tuple(counter.name for counter in counters)

    def _open_software_fallback(self, refused: dict[str, int], cpus: list[int]) -> list[OpenedCounter]:
        """The software events on every CPU, when no PMU event opened; the source is unavailable if none does."""
        counters, refused_software = self._open_events(SOFTWARE_EVENTS, cpus)
        if counters:
            log.warning("%s: every PMU event was refused (%s); counting software events instead",
                        self.source, self._reason(refused))
            self._log_left_out(refused_software, cpus[0])
        else:
            hardware, software = self._reason(refused), self._reason(refused_software)
            why = (f"every PMU and software event ({hardware})" if hardware == software
                   else f"every PMU event ({hardware}) and every software event ({software})")
            self._unavailable = (_most_common(refused_software) or errno.ENOENT, f"perf_event_open refused {why}")
        return counters

    def _log_left_out(self, refused: dict[str, int], cpu: int) -> None:
        """Name in one log line every event the kernel refused on the first CPU."""
        if refused:
            log.warning("%s: left out events refused by the kernel on cpu%d: %s", self.source, cpu,
                        ", ".join(f"{name} ({_errno_name(code)})" for name, code in refused.items()))

    def _events(self) -> tuple[PerfEvent, ...]:
        return self._requested if self._requested is not None else default_events(self._cpuinfo())

    def _open_events(self, events: Iterable[PerfEvent], cpus: list[int]) -> tuple[list[OpenedCounter], dict]:
        """Counters for the events the first CPU accepts, on every CPU; and event name → errno of those refused."""
        refused: dict[str, int] = {}
        accepted: list[PerfEvent] = []
        counters: list[OpenedCounter] = []
        for event in events:
            try:
                counters.append(self._counter(event, cpus[0]))
                accepted.append(event)
            except OSError as error:
                refused[event.name] = error.errno
        for cpu in cpus[1:]:
            counters += self._counters_on(accepted, cpu)
        return counters, refused

    def _counters_on(self, events: list[PerfEvent], cpu: int) -> list[OpenedCounter]:
        """The events the first CPU accepted, opened on another CPU; one refused there costs that channel alone."""
        counters = []
        for event in events:
            try:
                counters.append(self._counter(event, cpu))
            except OSError as error:  # e.g. a hybrid CPU whose small cores lack the event, or EMFILE
                self._warn_once(f"{event.name}:cpu{cpu}", "%s: %s refused on cpu%d (%s); channel left out",
                                self.source, event.name, cpu, _errno_name(error.errno))
        return counters

    def _counter(self, event: PerfEvent, cpu: int) -> OpenedCounter:
        fd = self._opener.open(event, cpu)
        return OpenedCounter(self._register(event.metric, f"cpu{cpu}", "cpu", "counter", event.unit), fd)

    def _reason(self, refused: dict[str, int]) -> str:
        """'ERRNAME: what it means here' for the errno most events were refused with."""
        code = _most_common(refused)
        if code is None:
            return "no events were requested"
        if code == errno.EACCES:
            return f"EACCES: perf_event_paranoid is {self._paranoid()}; run as root or grant CAP_PERFMON"
        return f"{_errno_name(code)}: {_REASONS.get(code, os.strerror(code))}"

    def _paranoid(self) -> str:
        try:
            return (self.procfs / "sys/kernel/perf_event_paranoid").read_text().strip()
        except OSError:
            return "unknown"

    def _cpuinfo(self) -> str:
        try:
            return (self.procfs / "cpuinfo").read_text()
        except OSError:  # without cpuinfo the vendor is unknown: the generic events still apply
            return ""


def _most_common(refused: dict[str, int]) -> int | None:
    counts = Counter(refused.values()).most_common(1)
    return counts[0][0] if counts else None


def _errno_name(code: int) -> str:
    """The errno's symbol; ENOTSUP and EOPNOTSUPP share a number on Linux, whose perf code returns the latter."""
    return "EOPNOTSUPP" if code == errno.EOPNOTSUPP else errno.errorcode.get(code, str(code))
