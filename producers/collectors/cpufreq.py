"""Current and maximum clock of every CPU from cpufreq (kHz in sysfs, MHz here)."""

from __future__ import annotations

from producers.collectors.base import SysfsFilesCollector
from producers.collectors.sysfs_names import numbered_directories
from schemas.agent_records import Channel

CPU_ROOT = "devices/system/cpu"


class CpuFreqCollector(SysfsFilesCollector):
    """scaling_cur_freq as a gauge per CPU and cpuinfo_max_freq as its static ceiling.

    CPUs without a cpufreq directory (no cpufreq driver, as in most VMs) have no channels.
    """

    source = "/sys/devices/system/cpu/cpu*/cpufreq"
    default_interval_s = 0.1

    def discover(self):
        for cpu in numbered_directories(self.sysfs / CPU_ROOT, "cpu"):
            policy = cpu / "cpufreq"  # a link to ../cpufreq/policyN, shared by the CPUs of one policy
            if not policy.is_dir():
                continue
            yield (Channel(f"cpu.freq_mhz.{cpu.name}", "cpu", "gauge", "MHz", cpu.name),
                   policy / "scaling_cur_freq", 0.001)
            yield (Channel(f"cpu.freq_max_mhz.{cpu.name}", "cpu", "static", "MHz", cpu.name),
                   policy / "cpuinfo_max_freq", 0.001)

