"""The procfs sources beyond the basics: vmstat, netstat, sockstat, softnet_stat, PSI, interrupts and softirqs,
over text captured from a Linux 6.x VM (tests/fixtures/proc) and a hand-built 96-CPU host (tests/fixtures/proc-large)."""

import math
import shutil

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from producers.collectors.interrupts import InterruptsCollector, SoftIrqsCollector
from producers.collectors.pressure import PressureCollector
from producers.collectors.snmp import NetstatCollector
from producers.collectors.sockstat import SockStatCollector
from producers.collectors.softnet import SoftnetCollector
from producers.collectors.vmstat import VmStatCollector
from tests.conftest import FIXTURES

LARGE = FIXTURES / "proc-large"
SOURCES = (VmStatCollector, NetstatCollector, SockStatCollector, SoftnetCollector, PressureCollector,
           InterruptsCollector, SoftIrqsCollector)


@pytest.mark.parametrize("collector_class", SOURCES)
def test_contract_finite_values_described_channels_and_stable_names(collector_class, procfs):
    collector = collector_class(procfs)
    first, second = collector.read(), collector.read()
    assert len(first.names) > 0 and first.names is second.names
    assert np.isfinite(first.values).all()
    for name in first.names:
        assert collector.describe(name).name == name


def test_vmstat_separates_page_gauges_from_event_counters(procfs):
    collector = VmStatCollector(procfs)
    values = collector.collect()
    assert collector.describe("vm.nr_dirty").kind == "gauge"
    assert collector.describe("vm.nr_dirtied").kind == "counter"
    assert collector.describe("vm.pgmajfault").kind == "event"
    assert collector.describe("vm.pgfault").kind == "counter"
    assert values["vm.nr_free_pages"] > 0


def test_vmstat_puts_the_flow_of_block_io_through_the_page_cache_under_storage(procfs):
    collector = VmStatCollector(procfs)
    collector.collect()
    for name in ("vm.pgpgin", "vm.pgpgout", "vm.nr_dirtied", "vm.nr_written"):
        assert collector.describe(name).subsystem == "storage"
    for name in ("vm.nr_dirty", "vm.pgfault", "vm.nr_anon_pages", "vm.pswpout"):
        assert collector.describe(name).subsystem == "memory"


def test_netstat_reads_the_nstat_retransmission_view(procfs):
    collector = NetstatCollector(procfs)
    values = collector.collect()
    for field in ("TCPLostRetransmit", "TCPTimeouts", "TCPSynRetrans", "ListenDrops"):
        assert f"snmp.TcpExt.{field}" in values
        assert collector.describe(f"snmp.TcpExt.{field}").kind == "event"
    assert "snmp.IpExt.InOctets" in values


def test_sockstat_pairs_become_gauges(procfs):
    values = SockStatCollector(procfs).collect()
    assert "sock.tcp_inuse" in values and "sock.sockets_used" in values


def test_softnet_parses_hex_and_uses_the_cpu_column():
    collector = SoftnetCollector(LARGE)
    values = collector.collect()
    assert len([n for n in values if n.startswith("net.softnet_dropped.")]) == 96
    first_line = (LARGE / "net" / "softnet_stat").read_text().split()[0]
    assert values["net.softnet_processed.cpu0"] == int(first_line, 16)
    assert collector.describe("net.softnet_time_squeeze.cpu95").kind == "event"


def test_pressure_reads_some_and_full_for_each_resource(procfs):
    values = PressureCollector(procfs).collect()
    assert {"psi.cpu_some_total_us", "psi.memory_full_total_us", "psi.io_some_avg10"} <= set(values)


def test_interrupts_large_host_totals_busiest_lines_and_single_value_lines():
    collector = InterruptsCollector(LARGE, busiest_lines=4)
    values = collector.collect()
    assert len([n for n in values if n.startswith("irq.total.")]) == 96
    assert values["irq.400.cpu3"] == 987654321 and values["irq.400.cpu0"] == 0  # the IRQ-imbalance line
    assert "irq.ERR" in values and collector.describe("irq.ERR").kind == "event"
    assert len(values) == 96 + 4 * 96 + 2
    raw = np.array([[float(t) for t in line.split()[1:97]] for line in (LARGE / "interrupts").read_text().splitlines()[1:]
                    if len(line.split()) > 96])
    assert values["irq.total.cpu7"] == raw[:, 7].sum()


def test_softirqs_large_host_has_every_type_on_every_cpu():
    values = SoftIrqsCollector(LARGE).collect()
    assert len(values) == 10 * 96
    assert "softirq.net_rx.cpu95" in values


def test_new_irq_line_changes_the_layout_and_keeps_reading(tmp_path):
    shutil.copy(LARGE / "interrupts", tmp_path / "interrupts")
    collector = InterruptsCollector(tmp_path)
    before = collector.read()
    text = (tmp_path / "interrupts").read_text().splitlines()
    text.insert(2, " 999: " + " ".join(["7"] * 96) + "  IR-PCI-MSI 1-edge new-device")
    (tmp_path / "interrupts").write_text("\n".join(text) + "\n")
    after = collector.read()
    assert sum(after.values[:96]) == sum(before.values[:96]) + 7 * 96


def test_a_malformed_value_costs_only_its_line(tmp_path):
    text = (FIXTURES / "proc" / "vmstat").read_text().replace("pgfault ", "pgfault x", 1)
    (tmp_path / "vmstat").write_text(text)
    values = VmStatCollector(tmp_path).collect()
    assert "vm.pgfault" not in values and "vm.pgmajfault" in values


def test_a_value_that_turns_malformed_after_the_layout_was_cached(tmp_path):
    (tmp_path / "vmstat").write_text((FIXTURES / "proc" / "vmstat").read_text())
    collector = VmStatCollector(tmp_path)
    assert "vm.pgfault" in collector.collect()
    (tmp_path / "vmstat").write_text((FIXTURES / "proc" / "vmstat").read_text().replace("pgfault ", "pgfault ?", 1))
    values = collector.collect()
    assert "vm.pgfault" not in values and len(values) > 100


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet="CPU0123456789abcdef :.-=\tavgtotalsomefull", max_size=80), max_size=10))
def test_garbage_never_crashes_these_sources(tmp_path_factory, lines):
    root = tmp_path_factory.mktemp("garbage")
    (root / "net").mkdir()
    (root / "pressure").mkdir()
    for relative in ("vmstat", "net/netstat", "net/sockstat", "net/softnet_stat", "interrupts", "softirqs",
                     "pressure/cpu", "pressure/memory", "pressure/io"):
        (root / relative).write_text("\n".join(lines))
    for collector_class in SOURCES:
        reading = collector_class(root).read()
        assert len(reading.names) == len(reading.values)
        assert all(isinstance(v, float) and not math.isinf(v) for v in list(reading.values))
