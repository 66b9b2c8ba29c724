"""PressureCollector over the PSI files (/proc/pressure) captured from a Linux 6.x VM."""

from producers.collectors.pressure import PressureCollector


def test_pressure_reads_some_and_full_for_each_resource(procfs):
    values = PressureCollector(procfs).collect()
    assert {"psi.cpu_some_total_us", "psi.memory_full_total_us", "psi.io_some_total_us"} <= set(values)
    assert not any("avg" in name for name in values), "the kernel's moving averages lag the stall they average"
