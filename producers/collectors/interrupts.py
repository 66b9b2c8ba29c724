"""Interrupts per CPU from /proc/interrupts and softirqs per CPU from /proc/softirqs.

IRQ imbalance (paper §6) shows as one CPU taking most of a busy line's interrupts, so besides each CPU's total the
busiest lines keep their own per-CPU channels.
"""

from __future__ import annotations

import re

import numpy as np

from producers.collectors.base import Field, ProcTextCollector, Reading
from producers.fast_read.scanned_layout import ScannedLayout
from producers.fast_read.token_layout import TokenLayout

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def _cpu_count(header: list[bytes]) -> int:
    if not header or not all(token.startswith(b"CPU") for token in header):
        raise ValueError("the first line must name the CPUs")
    return len(header)


class InterruptsCollector(ProcTextCollector):
    """Per-CPU interrupt totals, the `busiest_lines` busiest IRQ lines per CPU, and the one-value ERR/MIS lines."""

    default_interval_s = 0.2

    source = "/proc/interrupts"
    relative = "interrupts"

    def __init__(self, procfs="/proc", sysfs="/sys", busiest_lines: int = 4):
        super().__init__(procfs, sysfs)
        self.busiest_lines = busiest_lines
        self._shape_of: tuple | None = None
        self._summary_plan: tuple[ScannedLayout, ScannedLayout | None] | None = None

    def fields(self, lines):
        """Per-CPU counts of every line first, then the one-value lines (ERR, MIS), wherever they stand."""
        self._cpus = 0
        self._cpus = cpus = _cpu_count(lines[0]) if lines else 0
        singles = []
        for number, tokens in enumerate(lines[1:], start=1):
            label = tokens[0].rstrip(b":").decode() if tokens else ""
            if len(tokens) >= cpus + 1 and all(t.isdigit() for t in tokens[1:cpus + 1]):
                yield from (Field(number, 1 + c, f"irq.line_{label}", f"cpu{c}", "cpu", "counter", "interrupts")
                            for c in range(cpus))
            elif len(tokens) == 2 and tokens[1].isdigit():
                singles.append(Field(number, 1, f"irq.{_UNSAFE.sub('_', label)}", "", "cpu", "event", "interrupts"))
            elif tokens:
                self._skip_line(tokens, ValueError(f"expected a label and {cpus} counts"))
        yield from singles

    def read(self) -> Reading:
        raw = super().read()
        if self._shape_of is None or self._shape_of[0] is not raw.names:
            self._shape_of = (raw.names, *self._summary_layout(raw))
        _, names, per_cpu, busiest_rows = self._shape_of
        counts = np.asarray(raw.values[:per_cpu])
        matrix = counts.reshape(-1, self._cpus) if self._cpus else np.empty((0, 0))
        singles = np.asarray(raw.values[per_cpu:], dtype=np.float64)
        return Reading(names, np.concatenate([matrix.sum(axis=0), matrix[busiest_rows].ravel(), singles]))

    def scan_plan(self) -> tuple[ScannedLayout, int] | None:
        """The summary scanned straight from the file: each per-CPU count is added into its CPU's total and, on a
        busiest line, also kept in its own channel, as `read` computes it."""
        raw = self._scanned
        if raw is None or self._shape_of is None or self._shape_of[0] is not raw.names:
            return None
        if self._summary_plan is None or self._summary_plan[0] is not raw:
            self._summary_plan = (raw, self._summary_scan(raw))
        summary = self._summary_plan[1]
        return None if summary is None else (summary, self._file.fileno())

    def _summary_scan(self, raw: ScannedLayout) -> ScannedLayout | None:
        _, names, per_cpu, busiest_rows = self._shape_of
        layout, cpus, data = self._layout, self._cpus, raw.text()
        if data is None or not cpus or layout.scales is not None:
            return None
        at = layout.value_positions
        picks = [(at[index], index % cpus, True) for index in range(per_cpu)]
        picks += [(at[row * cpus + cpu], rank * cpus + cpu, False)
                  for rank, row in enumerate(busiest_rows, start=1) for cpu in range(cpus)]
        first_single = (1 + len(busiest_rows)) * cpus
        picks += [(at[index], first_single + index - per_cpu, False) for index in range(per_cpu, len(at))]
        if not picks:
            return None
        positions, slots, adds = (list(column) for column in zip(*picks))
        summary = TokenLayout(names, layout.token_count, positions, layout.label_positions, layout.labels, None,
                              layout.base)
        return ScannedLayout(summary, data, raw.read_size, slots, adds)

    def _summary_layout(self, raw: Reading):
        """Names of the summary channels for a raw layout: totals, busiest lines, one-value lines."""
        per_cpu = sum(1 for n in raw.names if n.startswith("irq.line_"))
        matrix = np.asarray(raw.values[:per_cpu]).reshape(-1, self._cpus) if self._cpus else np.empty((0, 0))
        line_labels = [raw.names[row * self._cpus].split(".")[1][5:] for row in range(matrix.shape[0])]
        busiest = busiest_rows(matrix.sum(axis=1), line_labels, self.busiest_lines)
        names = [self._register("irq.total", f"cpu{c}", "cpu", "counter", "interrupts") for c in range(self._cpus)]
        for row in busiest:
            metric = f"irq.{_UNSAFE.sub('_', line_labels[row])}"
            names += [self._register(metric, f"cpu{c}", "cpu", "counter", "interrupts") for c in range(self._cpus)]
        names += list(raw.names[per_cpu:])
        return tuple(names), per_cpu, busiest


def busiest_rows(totals: np.ndarray, labels: list[str], count: int) -> list[int]:
    """The rows of the `count` busiest lines, ranked by the power of two their count since boot reaches and, within
    one, by label: lines within a factor of two of each other (RES and a NIC queue, say) would otherwise swap places
    between restarts of a host whose interrupts have not changed, and its catalog with them."""
    octaves = np.floor(np.log2(np.maximum(totals, 1.0)))
    return sorted(range(len(labels)), key=lambda row: (-octaves[row], labels[row]))[:count]


class SoftIrqsCollector(ProcTextCollector):
    """Softirqs per type and CPU: NET_RX, NET_TX, BLOCK, TIMER, SCHED, RCU, …"""

    source = "/proc/softirqs"
    relative = "softirqs"

    def fields(self, lines):
        cpus = _cpu_count(lines[0]) if lines else 0
        for number, tokens in enumerate(lines[1:], start=1):
            if len(tokens) != cpus + 1 or not tokens[0].endswith(b":"):
                self._skip_line(tokens, ValueError(f"expected a type and {cpus} counts"))
                continue
            kind = tokens[0][:-1].decode().lower()
            yield from (Field(number, 1 + c, f"softirq.{kind}", f"cpu{c}", "cpu", "counter", "softirqs")
                        for c in range(cpus))
