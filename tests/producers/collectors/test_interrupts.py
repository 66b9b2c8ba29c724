"""InterruptsCollector and SoftIrqsCollector over /proc/interrupts and /proc/softirqs of a hand-built 96-CPU host."""

import shutil

import numpy as np

from producers.collectors.interrupts import InterruptsCollector, SoftIrqsCollector
from producers.registry import CollectorRegistry
from tests.conftest import FIXTURES

LARGE = FIXTURES / "proc-large"


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


CAPTURED = FIXTURES / "proc" / "interrupts"  # LOC first; the virtio queue 36 and CAL within 5 % of each other


def _restarted_host(tmp_path):
    """The captured host a little later, when CAL has overtaken line 36 (a restart of the agent reads it)."""
    later = tmp_path / "later"
    later.mkdir()
    text = CAPTURED.read_text().replace("     163454 ", "     163954 ").replace("CAL:      92012", "CAL:     100012")
    (later / "interrupts").write_text(text)
    return later


def _line_totals(procfs) -> dict[str, int]:
    lines = (line.split() for line in (procfs / "interrupts").read_text().splitlines()[1:])
    return {tokens[0].rstrip(":"): int(tokens[1]) + int(tokens[2]) for tokens in lines if len(tokens) > 2}


def test_a_restart_keeps_the_busiest_lines_though_two_near_equal_ones_swapped_places(tmp_path):
    later = _restarted_host(tmp_path)
    now, then = _line_totals(CAPTURED.parent), _line_totals(later)
    assert now["36"] > now["CAL"] and then["CAL"] > then["36"], "the two lines swap places"
    before = InterruptsCollector(CAPTURED.parent, busiest_lines=2).collect()
    after = InterruptsCollector(later, busiest_lines=2).collect()
    assert {"irq.LOC.cpu0", "irq.36.cpu0"} <= before.keys() and "irq.CAL.cpu0" not in before
    assert before.keys() == after.keys()


def test_a_restart_on_a_host_whose_busiest_lines_swapped_places_keeps_the_catalog_version(tmp_path):
    first = CollectorRegistry([InterruptsCollector(CAPTURED.parent)], "h", "c", 0.1)
    second = CollectorRegistry([InterruptsCollector(_restarted_host(tmp_path))], "h", "c", 0.1)
    first.sample(), second.sample()
    assert first.catalog.version == second.catalog.version and first.catalog == second.catalog
