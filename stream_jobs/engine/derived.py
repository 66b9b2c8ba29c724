"""Derived signals (paper Appendix B): per-second rates from cumulative counters, safe across wraps and resets,
and derived metrics over them: CPU busy %, IPC, miss and stall ratios, busy MHz, retransmits per segment, memory used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from schemas.channels import TCP_OUT_SEGMENTS, TCP_RETRANSMITS

_WRAP_32 = float(2**32)


def counter_deltas(values: np.ndarray) -> np.ndarray:
    """Row-to-row increases of cumulative counters (n, c) → (n-1, c).

    A decrease is a 32-bit wrap when the previous value fits 32 bits and the drop is more than half the range;
    otherwise the counter was reset (a reboot, a driver reload) and restarted from zero, as Prometheus assumes.
    """
    previous, current = values[:-1], values[1:]
    deltas = current - previous
    dropped = deltas < 0
    if dropped.any():
        wrapped = dropped & (previous < _WRAP_32) & (previous - current > _WRAP_32 / 2)
        deltas = np.where(wrapped, deltas + _WRAP_32, np.where(dropped, current, deltas))
    return deltas


def step_seconds(timestamps_ns: np.ndarray, min_step_s: float = 0.0) -> np.ndarray:
    """The seconds each step spans, at least `min_step_s`: a sampler that fell behind takes its next sample a
    fraction of a millisecond after the late one, and a counter kept in coarse units (10 ms CPU ticks) that moved by
    one unit across such a step would read as dozens of cores for one step."""
    return np.fmax(np.diff(timestamps_ns).astype(np.float64) / 1e9, min_step_s)


def signals(timestamps_ns: np.ndarray, values: np.ndarray, cumulative: np.ndarray,
            min_step_s: float = 0.0) -> np.ndarray:
    """The per-step signal of every channel (n-1, c): rates per second for counters (over steps of at least
    `min_step_s`, see step_seconds), levels for gauges."""
    seconds = step_seconds(timestamps_ns, min_step_s)
    out = values[1:].astype(np.float64, copy=True)
    if cumulative.any():
        out[:, cumulative] = counter_deltas(values[:, cumulative]) / seconds[:, None]
    return out


@dataclass(frozen=True)
class DerivedSpec:
    """One derived channel: its name, subsystem, the catalog indices of its inputs, and its formula."""

    name: str
    subsystem: str
    inputs: tuple[int, ...]
    formula: str

    def __post_init__(self):
        if self.formula not in _FORMULAS:
            raise ValueError(f"{self.name} has formula {self.formula!r}; expected one of {sorted(_FORMULAS)}")


@dataclass(frozen=True)
class _Template:
    """A derived metric over input channel names; '{}' stands for the device (a CPU, an interface)."""

    name: str
    subsystem: str
    formula: str
    inputs: tuple[str, ...]


_CPU_STATES = ("idle", "iowait", "user", "nice", "system", "irq", "softirq", "steal")  # idle time first, see _busy_pct
_TEMPLATES = (
    _Template("cpu.busy_pct.{}", "cpu", "busy_pct", tuple(f"cpu.{state}.{{}}" for state in _CPU_STATES)),
    _Template("pmu.ipc.{}", "cpu", "delta_ratio", ("pmu.instructions.{}", "pmu.cycles.{}")),
    _Template("pmu.branch_miss_rate.{}", "cpu", "delta_ratio", ("pmu.branch_misses.{}", "pmu.instructions.{}")),
    _Template("pmu.cache_miss_ratio.{}", "cpu", "delta_ratio", ("pmu.cache_misses.{}", "pmu.cache_references.{}")),
    _Template("pmu.l3_stall_ratio.{}", "cpu", "delta_ratio", ("pmu.cycle_activity_stalls_l3_miss.{}", "pmu.cycles.{}")),
    _Template("cpu.busy_mhz.{}", "cpu", "busy_mhz", ("cpu.aperf.{}", "cpu.mperf.{}", "cpu.tsc_mhz")),
    _Template("net.bytes_per_s.{}", "network", "summed_rate", ("net.rx_bytes.{}", "net.tx_bytes.{}")),
    _Template("net.retrans_per_segment", "network", "delta_ratio", (TCP_RETRANSMITS, TCP_OUT_SEGMENTS)),
    _Template("mem.used_pct", "memory", "used_pct", ("mem.MemAvailable", "mem.MemTotal")),
)


def derived_specs(names: tuple[str, ...]) -> list[DerivedSpec]:
    """The derived metrics whose inputs all exist among `names`, metric by metric, devices in catalog order.

    >>> [s.name for s in derived_specs(("pmu.cycles.cpu0", "pmu.instructions.cpu0", "pmu.cycles.cpu1"))]
    ['pmu.ipc.cpu0']
    """
    index = {name: i for i, name in enumerate(names)}
    return [spec for template in _TEMPLATES for device in _devices(template.inputs[0], names)
            if (spec := _spec(template, device, index)) is not None]


def _devices(pattern: str, names: tuple[str, ...]) -> list[str]:
    """Devices for which a channel matches `pattern`, in catalog order; [''] for a host-wide pattern."""
    if "{}" not in pattern:
        return [""]
    prefix = pattern.removesuffix("{}")
    return [name[len(prefix):] for name in names if name.startswith(prefix) and len(name) > len(prefix)]


def _spec(template: _Template, device: str, index: dict[str, int]) -> DerivedSpec | None:
    """The template's spec for one device, or None when an input is missing."""
    inputs = tuple(index.get(pattern.format(device), -1) for pattern in template.inputs)
    if min(inputs) < 0:
        return None
    return DerivedSpec(template.name.format(device), template.subsystem, inputs, template.formula)


def derive(specs: Sequence[DerivedSpec], timestamps_ns: np.ndarray, values: np.ndarray,
           min_step_s: float = 0.0) -> np.ndarray:
    """Per-step values (n-1, len(specs)) of the derived channels over one window of raw frames (n, c), rates over
    steps of at least `min_step_s` (see step_seconds).

    Specs sharing a formula are computed together; a zero denominator gives NaN.
    """
    values = np.asarray(values, dtype=np.float64)
    seconds = step_seconds(timestamps_ns, min_step_s)
    out = np.full((len(values) - 1, len(specs)), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero denominator is NaN by design, not news
        for formula, columns, inputs in _grouped(tuple(specs)):
            out[:, columns] = _FORMULAS[formula](values, inputs, seconds)
    return out


@lru_cache(maxsize=256)
def _grouped(specs: tuple[DerivedSpec, ...]) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(formula, output columns, input index matrix) for each formula the specs use; built once per spec list."""
    formulas = [spec.formula for spec in specs]
    groups = []
    for formula in dict.fromkeys(formulas):
        columns = np.flatnonzero(np.asarray(formulas) == formula)
        groups.append((formula, columns, np.array([specs[i].inputs for i in columns], dtype=np.intp)))
    return groups


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    return np.divide(numerator, denominator, out=np.full(np.broadcast(numerator, denominator).shape, np.nan),
                     where=denominator != 0)


def _busy_pct(values: np.ndarray, inputs: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    """100·(1 − Δ(idle+iowait)/Δ(all states)), like top's %CPU busy."""
    deltas = counter_deltas(values[:, inputs])
    return 100.0 * (1.0 - _ratio(deltas[..., 0] + deltas[..., 1], deltas.sum(axis=-1)))


def _delta_ratio(values: np.ndarray, inputs: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    """Δfirst/Δsecond: IPC, miss and stall ratios, retransmits per segment."""
    deltas = counter_deltas(values[:, inputs])
    return _ratio(deltas[..., 0], deltas[..., 1])


def _busy_mhz(values: np.ndarray, inputs: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    """tsc_mhz·Δaperf/Δmperf: the mean clock while not idle (turbostat's Bzy_MHz)."""
    deltas = counter_deltas(values[:, inputs[:, :2]])
    return values[1:, inputs[:, 2]] * _ratio(deltas[..., 0], deltas[..., 1])


def _summed_rate(values: np.ndarray, inputs: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    """(Δfirst + Δsecond) per second: an interface's traffic in both directions."""
    return counter_deltas(values[:, inputs]).sum(axis=-1) / seconds[:, None]


def _used_pct(values: np.ndarray, inputs: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    """100·(1 − available/total) from levels at the end of each step."""
    return 100.0 * (1.0 - _ratio(values[1:, inputs[:, 0]], values[1:, inputs[:, 1]]))


_FORMULAS = {"busy_pct": _busy_pct, "delta_ratio": _delta_ratio, "busy_mhz": _busy_mhz,
             "summed_rate": _summed_rate, "used_pct": _used_pct}
