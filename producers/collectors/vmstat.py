"""Virtual-memory event counters and page-state gauges from /proc/vmstat."""

from __future__ import annotations

from producers.collectors.base import Field, ProcTextCollector

# Cumulative counts among the nr_* fields, which are otherwise current page counts (the kernel's node_stat_item
# comments: "since bootup", pins acquired and released).
_NR_COUNTERS = frozenset({"nr_dirtied", "nr_written", "nr_unstable", "nr_vmscan_write", "nr_vmscan_immediate_reclaim",
                          "nr_throttled_written", "nr_foll_pin_acquired", "nr_foll_pin_released"})
# Current counts among the other fields, which are otherwise events since boot: shadow nodes the page cache holds.
_OTHER_GAUGES = frozenset({"workingset_nodes"})
# Pages read from and written to block devices, and dirtied then written back: the flow of storage I/O through the
# page cache, not memory use.
_STORAGE_FLOWS = frozenset({"pgpgin", "pgpgout", "nr_dirtied", "nr_written"})
# Rare events that mark pressure or faults: summed and watched for bursts downstream.
_EVENT_PREFIXES = ("pgmajfault", "oom_kill", "allocstall", "compact_stall", "compact_fail", "pswpin", "pswpout",
                   "thp_fault_fallback", "thp_collapse_alloc_failed", "drop_pagecache", "drop_slab", "workingset_refault")


def vmstat_subsystem(key: str) -> str:
    return "storage" if key in _STORAGE_FLOWS else "memory"


def vmstat_kind(key: str) -> str:
    if (key.startswith("nr_") and key not in _NR_COUNTERS) or key in _OTHER_GAUGES:
        return "gauge"
    return "event" if key.startswith(_EVENT_PREFIXES) else "counter"


class VmStatCollector(ProcTextCollector):
    """Every 'name value' line: nr_* gauges (pages) and cumulative counters (pgfault, pgmajfault, pswpin, …)."""

    default_interval_s = 0.5

    source = "/proc/vmstat"
    relative = "vmstat"

    def line_fields(self, number, tokens):
        if len(tokens) != 2:
            raise ValueError("expected 'name value'")
        key = tokens[0].decode()
        unit = "pages" if key.startswith("nr_") else ""
        return [Field(number, 1, f"vm.{key}", "", vmstat_subsystem(key), vmstat_kind(key), unit)]
