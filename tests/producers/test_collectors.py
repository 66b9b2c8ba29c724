"""Collectors over real /proc text captured from a Linux 6.x VM, a hand-built 96-CPU host and an old kernel."""

import math

import pytest
from hypothesis import given, settings, strategies as st

from producers.collectors.diskstats import DiskStatsCollector
from producers.collectors.meminfo import MemInfoCollector
from producers.collectors.netdev import NetDevCollector
from producers.collectors.procstat import ProcStatCollector
from producers.collectors.snmp import SnmpCollector
from tests.conftest import FIXTURES

ALL = (ProcStatCollector, MemInfoCollector, NetDevCollector, SnmpCollector, DiskStatsCollector)


@pytest.mark.parametrize("collector_class", ALL)
def test_contract_every_value_is_a_finite_float_with_a_catalog_entry(collector_class, procfs):
    collector = collector_class(procfs)
    values = collector.collect()
    assert values, f"{collector_class.__name__} read nothing from the captured fixture"
    for name, value in values.items():
        assert isinstance(value, float) and math.isfinite(value)
        channel = collector.describe(name)
        assert channel.name == name
        assert channel.subsystem in ("cpu", "memory", "network", "storage")


@pytest.mark.parametrize("collector_class", ALL)
def test_contract_repeated_collection_is_identical_for_unchanged_input(collector_class, procfs):
    collector = collector_class(procfs)
    assert collector.collect() == collector.collect()


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


def test_meminfo_converts_kb_to_bytes_and_keeps_hugepage_counts(procfs):
    collector = MemInfoCollector(procfs)
    values = collector.collect()
    text = (procfs / "meminfo").read_text()
    mem_total_kb = float(text.split("MemTotal:")[1].split()[0])
    assert values["mem.MemTotal"] == mem_total_kb * 1024
    assert collector.describe("mem.MemTotal").kind == "static"
    assert collector.describe("mem.HugePages_Free").unit == "pages"


def test_netdev_skips_loopback_by_default_and_marks_errors_as_events(procfs):
    collector = NetDevCollector(procfs)
    values = collector.collect()
    assert not any(name.endswith(".lo") for name in values)
    assert collector.describe("net.rx_bytes.eth0").kind == "counter"
    assert collector.describe("net.rx_drop.eth0").kind == "event"
    assert any(name.endswith(".lo") for name in NetDevCollector(procfs, include_loopback=True).collect())


def test_snmp_reads_tcp_retransmissions_as_events(procfs):
    collector = SnmpCollector(procfs)
    values = collector.collect()
    assert "snmp.Tcp.RetransSegs" in values
    assert collector.describe("snmp.Tcp.RetransSegs").kind == "event"
    assert collector.describe("snmp.Tcp.CurrEstab").kind == "gauge"
    assert collector.describe("snmp.Tcp.RtoMin").kind == "static"
    assert values["snmp.Tcp.MaxConn"] == -1.0


def test_diskstats_excludes_loop_devices_and_reads_queue_depth_as_gauge(procfs):
    collector = DiskStatsCollector(procfs)
    values = collector.collect()
    assert not any(".loop" in name for name in values)
    assert collector.describe("disk.ios_in_progress.vda").kind == "gauge"


def test_diskstats_old_kernel_and_a_malformed_line_cost_only_that_device():
    values = DiskStatsCollector(FIXTURES / "proc-old-kernel").collect()
    assert values["disk.sectors_read.sda"] == 219714.0
    assert values["disk.reads_completed.nvme0n1"] == 91.0
    assert not any(name.endswith(".sdb") for name in values)
    assert "disk.discards_completed.sda" not in values


def test_missing_source_makes_the_collector_unavailable(tmp_path):
    assert not DiskStatsCollector(tmp_path).available()
    assert DiskStatsCollector(FIXTURES / "proc").available()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(alphabet="abcpu0123456789 :.-\t", max_size=60), max_size=12))
def test_garbage_lines_never_crash_a_collector(tmp_path_factory, lines):
    root = tmp_path_factory.mktemp("garbage")
    (root / "net").mkdir()
    for relative in ("stat", "meminfo", "diskstats", "net/dev", "net/snmp"):
        (root / relative).write_text("\n".join(lines))
    for collector_class in ALL:
        values = collector_class(root).collect()
        assert all(isinstance(v, float) for v in values.values())
