"""The host's limit, calibrated to a promise: false findings a clean host raises per day over all its columns at
once, from a tail fitted to the peaks of the baseline's runs, widened for a short baseline."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri, stdtrit

from stream_jobs.engine.thresholds import EXTRAPOLATION_LIMIT, MIN_PEAKS, excess_quantile, fit_tail

SECONDS_PER_DAY = 86400.0


@dataclass(frozen=True)
class Calibration:
    """What the host's limit is calibrated against: the promised false runs per day, the stride and window."""

    risk: float = 0.5
    stride_s: float = 1.0
    window_s: float = 3.0

    def __post_init__(self):
        if not self.risk > 0 or not self.stride_s > 0 or not self.window_s > 0:
            raise ValueError(f"risk {self.risk}, stride_s {self.stride_s} and window_s {self.window_s} must be > 0")


def calibrated_limit(statistic: np.ndarray, persist_rows: int, spacing: int, calibration: Calibration,
                     min_limit: float) -> float:
    """The host's limit in noise scales: the level that the baseline's statistic (the largest |z| over columns in
    each row; rows `spacing` windows apart), held for `persist_rows` rows, rises above in `risk` runs a day, from a
    tail fitted to its run peaks (see declustered_limit); a baseline shorter than a day at the promise is never
    given a limit below what it held. Widened by Student's t over the baseline's independent windows, never below
    `min_limit`."""
    statistic = np.nan_to_num(np.asarray(statistic, dtype=np.float64), nan=0.0)
    if statistic.size == 0:
        return math.inf
    row_s = spacing * calibration.stride_s
    days = statistic.size * row_s / SECONDS_PER_DAY
    allowed = calibration.risk * days
    held = _held(statistic, persist_rows)
    limit = declustered_limit(held, calibration.risk * row_s / SECONDS_PER_DAY)
    if allowed < 1:  # a baseline shorter than the promise has seen no false run: never below what it saw
        limit = max(limit, float(held.max()))
    independent = statistic.size * row_s / max(calibration.window_s, row_s)
    return max(float(limit) * short_baseline_widening(independent), min_limit)


def unseen_drift_widening(span_s: float, horizon_s: float) -> float:
    """How much wider a limit must be when the baseline spans less time than a model is used over before it is
    learned again: a level that wanders moves about √(horizon / span) times what a short baseline saw it move (a
    random walk's reach), so 30 s of a host judge only large changes over the next 10 minutes; 1 once the
    baseline spans the horizon.

    >>> unseen_drift_widening(30, 600) > 4 > unseen_drift_widening(300, 600) > 1 == unseen_drift_widening(900, 600)
    True
    """
    return math.sqrt(horizon_s / span_s) if 0 < span_s < horizon_s else 1.0


def short_baseline_widening(independent_windows: float, quantile: float = 1 - 1e-5) -> float:
    """How much wider a limit learned from this many independent windows must be: Student's t over the normal at
    a far quantile (1.0 for thousands, about 1.9 for ten).

    >>> round(short_baseline_widening(10), 2), round(short_baseline_widening(1e6), 2)
    (1.9, 1.0)
    """
    dof = max(1.0, independent_windows - 1)
    return float(stdtrit(dof, quantile) / ndtri(quantile))


def _held(statistic: np.ndarray, persist_rows: int) -> np.ndarray:
    """The level the statistic stayed at or above for the last `persist_rows` rows, at every row: what a
    persisted departure must exceed."""
    if statistic.size < persist_rows:
        return np.zeros(1)
    return np.min(np.lib.stride_tricks.sliding_window_view(statistic, persist_rows), axis=1)


def declustered_limit(held: np.ndarray, rate_per_row: float) -> float:
    """The level that runs of the held statistic rise above at `rate_per_row` (peaks over threshold, declustered
    by runs: each run above the initial level counts once, by its peak, so one long excursion is one false
    finding, not as many as it has windows). The tail of the run peaks is fitted (exponential unless a heavier one
    fits significantly better) and extrapolated where the baseline is too short to have seen the rate, never further
    past the baseline's highest than EXTRAPOLATION_LIMIT times its distance from the median (a tail fitted to a few
    minutes cannot say more)."""
    initial = _initial_level(held)
    above = held > initial
    starts = _run_starts(above)
    if starts.size == 0:
        return float(held.max()) if held.size else 0.0
    peaks = np.maximum.reduceat(np.where(above, held, -np.inf), starts)
    peaks = peaks[np.isfinite(peaks)] - initial
    rate_above = starts.size / held.size
    if rate_per_row >= rate_above:
        return float(np.quantile(held, 1.0 - min(rate_per_row, 1.0)))
    shape, scale, method = fit_tail(peaks)
    if method == "none":
        return float(initial + peaks.max())
    highest, middle = float(held.max()), float(np.median(held))
    extrapolated = float(initial + excess_quantile(shape, scale, rate_per_row / rate_above))
    return min(extrapolated, highest + EXTRAPOLATION_LIMIT * (highest - middle))


def _initial_level(held: np.ndarray) -> float:
    """The level run peaks are counted above: the held statistic's 98th percentile, lowered to leave at least
    MIN_PEAKS runs above it where the baseline has them (never below its median)."""
    ordered = np.sort(held)
    for quantile in (0.98, 0.95, 0.9, 0.8, 0.5):
        level = float(np.quantile(ordered, quantile))
        if _run_starts(held > level).size >= MIN_PEAKS:
            return level
    return float(np.quantile(ordered, 0.5))


def _run_starts(inside: np.ndarray) -> np.ndarray:
    """The rows where a run of True begins."""
    return np.flatnonzero(inside & ~np.concatenate([[False], inside[:-1]]))
