"""ProcStatCollector over /proc/stat captured from a Linux 6.x VM, a hand-built 96-CPU host and an old kernel."""

from producers.collectors.procstat import ProcStatCollector
from tests.conftest import FIXTURES


def test_procstat_reads_each_cpu_and_host_counters(procfs):
    values = ProcStatCollector(procfs).collect()
    assert values["cpu.user.cpu0"] == 1501.0 and values["cpu.idle.cpu1"] == 13162.0
    assert values["cpu.user.all"] == 5818.0
    assert "cpu.context_switches" in values and "cpu.procs_running" in values


def test_procstat_large_host_expands_to_96_cpus():
    collector = ProcStatCollector(FIXTURES / "proc-large")
    values = collector.collect()
    cpus = {collector.describe(n).device for n in values if n.startswith("cpu.user.")}
    assert len(cpus) == 97  # 96 CPUs and the host-wide line
    assert len(values) == 97 * 10 + 5
    assert values["cpu.procs_running"] == 97.0


def test_procstat_old_kernel_without_guest_fields():
    values = ProcStatCollector(FIXTURES / "proc-old-kernel").collect()
    assert values["cpu.steal.cpu1"] == 0.0
    assert "cpu.guest.cpu1" not in values
