"""Every telemetry source the agent knows, in frame order, with the roots they read."""

from __future__ import annotations

from producers.collectors.base import Collector
from producers.collectors.cgroups import CgroupCollector
from producers.collectors.cpufreq import CpuFreqCollector
from producers.collectors.cpuidle import CpuIdleCollector
from producers.collectors.infiniband import InfinibandCollector
from producers.collectors.msr import AperfMperfCollector
from producers.collectors.net_settings import NetSettingsCollector
from producers.collectors.numa import NumaCollector
from producers.collectors.rapl import RaplCollector
from producers.collectors.thermal import ThermalCollector
from producers.collectors.diskstats import DiskStatsCollector
from producers.collectors.meminfo import MemInfoCollector
from producers.collectors.netdev import NetDevCollector
from producers.collectors.nvml import NvmlCollector, NvmlSlowCollector
from producers.collectors.perf import PerfCollector
from producers.collectors.procstat import ProcStatCollector
from producers.collectors.qdisc import QdiscCollector
from producers.collectors.interrupts import InterruptsCollector, SoftIrqsCollector
from producers.collectors.pressure import PressureCollector
from producers.collectors.snmp import NetstatCollector, SnmpCollector
from producers.collectors.sockstat import SockStatCollector
from producers.collectors.softnet import SoftnetCollector
from producers.collectors.vmstat import VmStatCollector


SOURCE_GROUPS: dict[str, tuple[type[Collector], ...]] = {
    "cpu": (ProcStatCollector, CpuFreqCollector, AperfMperfCollector, CpuIdleCollector, PerfCollector),
    "interrupts": (InterruptsCollector, SoftIrqsCollector, SoftnetCollector),
    "memory": (MemInfoCollector, VmStatCollector, NumaCollector, PressureCollector),
    "network": (NetDevCollector, SnmpCollector, NetstatCollector, SockStatCollector, NetSettingsCollector,
                QdiscCollector),
    "storage": (DiskStatsCollector,),
    "power": (RaplCollector, ThermalCollector),
    "infiniband": (InfinibandCollector,),
    "gpu": (NvmlCollector, NvmlSlowCollector),
    "cgroups": (CgroupCollector,),
}
# The order of sources within a frame: fixed, so that agents of one version lay out a host's channels alike.
FRAME_ORDER = (ProcStatCollector, InterruptsCollector, SoftIrqsCollector, PressureCollector, MemInfoCollector,
               VmStatCollector, NetDevCollector, SnmpCollector, NetstatCollector, SockStatCollector,
               NetSettingsCollector, QdiscCollector, SoftnetCollector, DiskStatsCollector, CpuFreqCollector,
               AperfMperfCollector, CpuIdleCollector, RaplCollector, ThermalCollector, NumaCollector,
               InfinibandCollector, PerfCollector, NvmlCollector, NvmlSlowCollector, CgroupCollector)


def validate_groups(groups: tuple[str, ...]) -> tuple[str, ...]:
    """The groups, each checked against SOURCE_GROUPS; ValueError names an unknown one and the allowed names."""
    unknown = [g for g in groups if g not in SOURCE_GROUPS]
    if unknown:
        raise ValueError(f"source group {unknown[0]!r} is not one of {', '.join(SOURCE_GROUPS)}")
    return groups


def default_collectors(procfs: str = "/proc", sysfs: str = "/sys", cgroup_parent: str = "",
                       groups: tuple[str, ...] = (), net_procfs: str = "") -> list[Collector]:
    """One instance of every source (or of the sources in `groups`); the registry keeps those readable here.

    Network sources read `net_procfs` when given: /proc/PID shows the network namespace of process PID, so an agent
    in one namespace can report another's interfaces and TCP counters (the lab's emulated hosts).
    """
    wanted = {c for g in validate_groups(groups) for c in SOURCE_GROUPS[g]} if groups else set(FRAME_ORDER)
    network = set(SOURCE_GROUPS["network"])
    collectors: list[Collector] = []
    for source in FRAME_ORDER:
        if source not in wanted:
            continue
        if source is CgroupCollector:
            collectors.append(CgroupCollector(procfs, sysfs, parent=cgroup_parent))
        else:
            collectors.append(source(net_procfs or procfs, sysfs) if source in network else source(procfs, sysfs))
    return collectors
