"""The PMU events counted per CPU: the generic hardware events, a thin per-vendor table of raw events, and the
kernel's software events, with the CPU vendor read from /proc/cpuinfo.

The raw encodings are those of Intel Skylake and later and of AMD Zen; the kernel accepts a raw config on any model,
so on another generation the same number may count a different event.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

# include/uapi/linux/perf_event.h
PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE, PERF_TYPE_HW_CACHE, PERF_TYPE_RAW = 0, 1, 3, 4
PERF_COUNT_HW_CACHE_LL, PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_MISS = 2, 0, 1
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
