"""How far a column's window statistic moves over time: what a model of normal must allow a column that drifts or
wanders (autocorrelated, slow cycles) beyond its noise, measured on the baseline."""

from __future__ import annotations

import warnings

import numpy as np

from stream_jobs.engine.column_stats import MAD_TO_SIGMA, column_nanmedians, column_quantiles


def trimmed(stats: np.ndarray, share: float) -> np.ndarray:
    """The statistics with each column's `share` most extreme on either side blanked (NaN)."""
    low, high = column_quantiles(stats, [share, 1 - share])
    return np.where((stats >= low) & (stats <= high), stats, np.nan)


def wander(stats: np.ndarray, horizon_rows: int, independent_rows: int = 1) -> np.ndarray:
    """What each column moves over `horizon_rows` rows, as a noise scale: the variance of changes between rows
    that share no samples, grown by the slope it grows at out to a quarter of the baseline, out to the horizon; over
    √2. For independent noise that is its own noise scale; for a column that drifts or wanders (a random walk, a
    slow cycle), what it moves in that time. 0 without a horizon or with too short a baseline."""
    short = max(1, int(independent_rows))
    long = min(int(horizon_rows), stats.shape[0] // 4)
    if long <= short:
        return np.zeros(stats.shape[1])
    near, far = _change_variance(stats, short), _change_variance(stats, long)
    slope = np.fmax(far - near, 0.0) / (long - short)
    return np.sqrt(np.fmax(near + slope * (horizon_rows - short), 0.0) / 2.0)


def _change_variance(stats: np.ndarray, rows: int) -> np.ndarray:
    """Each column's robust variance of the change between rows `rows` apart."""
    change = stats[rows:] - stats[:-rows]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        median = column_nanmedians(change)
        spread = MAD_TO_SIGMA * column_nanmedians(np.abs(change - median))
    return np.nan_to_num(spread) ** 2
