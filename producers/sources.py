"""Every telemetry source the agent knows, in frame order, with the roots they read."""

from __future__ import annotations

from producers.collectors.base import Collector
from producers.collectors.cgroups import CgroupCollector
from producers.collectors.cpufreq import CpuFreqCollector
from producers.collectors.cpuidle import CpuIdleCollector
from producers.collectors.infiniband import InfinibandCollector
from producers.collectors.msr import AperfMperfCollector
from producers.collectors.numa import NumaCollector
from producers.collectors.rapl import RaplCollector
from producers.collectors.thermal import ThermalCollector
from producers.collectors.diskstats import DiskStatsCollector
from producers.collectors.meminfo import MemInfoCollector
from producers.collectors.netdev import NetDevCollector
from producers.collectors.nvml import NvmlCollector, NvmlSlowCollector
from producers.collectors.perf import PerfCollector
from producers.collectors.procstat import ProcStatCollector
from producers.collectors.interrupts import InterruptsCollector, SoftIrqsCollector
from producers.collectors.pressure import PressureCollector
from producers.collectors.snmp import NetstatCollector, SnmpCollector
from producers.collectors.sockstat import SockStatCollector
from producers.collectors.softnet import SoftnetCollector
from producers.collectors.vmstat import VmStatCollector


def default_collectors(procfs: str = "/proc", sysfs: str = "/sys", cgroup_parent: str = "") -> list[Collector]:
    """One instance of every source; the registry keeps those that can be read on this host."""
    proc_sources = (ProcStatCollector, InterruptsCollector, SoftIrqsCollector, PressureCollector, MemInfoCollector,
                    VmStatCollector, NetDevCollector, SnmpCollector, NetstatCollector, SockStatCollector,
                    SoftnetCollector, DiskStatsCollector)
    sysfs_sources = (CpuFreqCollector, AperfMperfCollector, CpuIdleCollector, RaplCollector, ThermalCollector,
                     NumaCollector, InfinibandCollector)
    device_sources = (PerfCollector, NvmlCollector, NvmlSlowCollector)
    return [*(source(procfs, sysfs) for source in (*proc_sources, *sysfs_sources, *device_sources)),
            CgroupCollector(procfs, sysfs, parent=cgroup_parent)]
