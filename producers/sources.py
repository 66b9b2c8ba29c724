"""Every telemetry source the agent knows, in frame order, with the roots they read."""

from __future__ import annotations

from producers.collectors.base import Collector
from producers.collectors.diskstats import DiskStatsCollector
from producers.collectors.meminfo import MemInfoCollector
from producers.collectors.netdev import NetDevCollector
from producers.collectors.procstat import ProcStatCollector
from producers.collectors.snmp import NetstatCollector, SnmpCollector


def default_collectors(procfs: str = "/proc", sysfs: str = "/sys") -> list[Collector]:
    """One instance of every source; the registry keeps those that can be read on this host."""
    return [ProcStatCollector(procfs, sysfs), MemInfoCollector(procfs, sysfs), NetDevCollector(procfs, sysfs),
            SnmpCollector(procfs, sysfs), NetstatCollector(procfs, sysfs), DiskStatsCollector(procfs, sysfs)]
