"""One collector per telemetry source; each reads an injected root and returns channel → value for one instant."""

__all__ = [
    "base", "cgroup_files", "cgroups", "cpufreq", "cpuidle", "diskstats", "health", "infiniband", "interrupts",
    "meminfo", "msr", "namespace_thread", "net_settings", "netdev", "numa", "nvml", "nvml_queries", "nvml_source",
    "own_footprint", "perf", "perf_events", "perf_syscall", "pressure", "procstat", "qdisc", "rapl", "snmp",
    "sockstat", "softnet", "sysfs_names", "thermal", "vmstat"
]
