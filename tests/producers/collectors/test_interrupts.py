"""InterruptsCollector and SoftIrqsCollector over /proc/interrupts and /proc/softirqs of a hand-built 96-CPU host."""

import shutil

import numpy as np

from producers.collectors.interrupts import InterruptsCollector, SoftIrqsCollector
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
