"""Order statistics of every column of a baseline at once.

numpy's nanquantile reads each column that holds a NaN on its own (a Python loop over columns), and a baseline of
window statistics holds NaN in most of its few thousand columns (a spread or residual known only for some windows, a
value left out of the history while it departed); fitting one host's bands took ~80 ms that way. Here every column is
sorted at once and numpy's own interpolation applied, so the result is numpy's to the bit. Its nanmedian does the
same per column, and is replaced the same way.

Means and standard deviations that skip NaN take numpy's plain ones where nothing is NaN, as most windows are: the
same sums in the same order, so the same bits, in a third of nanstd's passes over the data.
"""

from __future__ import annotations

import numpy as np

MAD_TO_SIGMA = 1.4826  # a normal distribution's standard deviation in median absolute deviations


def column_quantiles(stats: np.ndarray, quantiles) -> np.ndarray:
    """np.nanquantile(stats, quantiles, axis=0) with numpy's default (linear) method: one row per quantile, NaN for
    a column with no value."""
    stats = np.asarray(stats, dtype=np.float64)
    quantiles = np.asarray(quantiles, dtype=np.float64)
    ordered = np.sort(stats, axis=0)  # NaN sorts last, so each column's values lead it in order
    last = np.broadcast_to((~np.isnan(stats)).sum(axis=0) - 1, (len(quantiles), stats.shape[1]))
    virtual = last * quantiles[:, None]
    below = np.floor(virtual)
    at_top = virtual >= last  # the largest value (and a column with none: its last row, NaN)
    previous = np.where(at_top, last, np.fmax(below, 0))
    following = np.where(at_top, last, np.fmax(below, 0) + 1)
    low = np.take_along_axis(ordered, previous.astype(np.intp), axis=0)
    high = np.take_along_axis(ordered, following.astype(np.intp), axis=0)
    return _lerp(low, high, virtual - below)


def _lerp(low: np.ndarray, high: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """numpy's interpolation between neighbouring order statistics, from whichever end is nearer."""
    with np.errstate(invalid="ignore"):  # a column with no value, or with infinities, is NaN as in numpy
        step = high - low
        return np.where(gamma >= 0.5, high - step * (1 - gamma), low + step * gamma)


def column_nanmedians(stats: np.ndarray) -> np.ndarray:
    """np.nanmedian(stats, axis=0), to the bit but for a middle value beyond ±8.9e307, which numpy overflows to
    infinity: NaN for a column with no value. numpy takes the median of each column that holds a NaN on its own
    (a Python loop, or masked arrays below 600 rows)."""
    stats = np.asarray(stats, dtype=np.float64)
    if stats.ndim != 2 or stats.shape[0] == 0:
        with np.errstate(invalid="ignore"):
            return np.nanmedian(stats, axis=0)
    ordered = np.sort(stats, axis=0)  # NaN sorts last, so each column's values lead it in order
    count = (~np.isnan(stats)).sum(axis=0)
    low = np.take_along_axis(ordered, np.fmax((count - 1) // 2, 0)[None, :], axis=0)[0]
    high = np.take_along_axis(ordered, (count // 2)[None, :].clip(max=len(stats) - 1), axis=0)[0]
    with np.errstate(invalid="ignore"):
        middle = np.where(count % 2 == 1, low, (low + high) / 2.0)
    return np.where(count > 0, middle, np.nan)


def nanmean(values: np.ndarray, axis: int) -> np.ndarray:
    """np.nanmean(values, axis=axis) to the bit; numpy's plain mean where no value is NaN."""
    values = np.asarray(values, dtype=np.float64)
    return np.nanmean(values, axis=axis) if np.isnan(values).any() else values.mean(axis=axis)


def nanstd(values: np.ndarray, axis: int) -> np.ndarray:
    """np.nanstd(values, axis=axis) to the bit; numpy's plain standard deviation where no value is NaN."""
    values = np.asarray(values, dtype=np.float64)
    return np.nanstd(values, axis=axis) if np.isnan(values).any() else values.std(axis=axis)
