"""Derived signals (paper Appendix B): per-second rates from cumulative counters, safe across wraps and resets."""

from __future__ import annotations

import numpy as np

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


def signals(timestamps_ns: np.ndarray, values: np.ndarray, cumulative: np.ndarray) -> np.ndarray:
    """The per-step signal of every channel (n-1, c): rates per second for counters, levels for gauges."""
    seconds = np.diff(timestamps_ns).astype(np.float64) / 1e9
    out = values[1:].astype(np.float64, copy=True)
    if cumulative.any():
        out[:, cumulative] = counter_deltas(values[:, cumulative]) / seconds[:, None]
    return out
