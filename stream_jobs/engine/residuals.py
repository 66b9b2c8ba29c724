"""Signals that channel selection pruned, watched as their residuals from the kept signals that represent them."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from stream_jobs.engine.column_stats import nanmean, nanstd


# The least share of one half of the baseline's variance of a pruned signal that the line fitted on the other half
# must explain for the residual to be watched.
STABLE_SHARE = 0.5


@dataclass(frozen=True, eq=False)
class Residuals:
    """Each signal that selection pruned, as its residual from the kept signal that represents it (a least-squares
    line fitted on the baseline): the residual's mean and spread within a window are watched like channels, so a
    pruned signal that shifts on its own stays visible and a correlation that breaks shows as a residual that
    widens. `level` is each pruned signal's baseline mean, which floors its residual (see
    WatchedColumns.watch_floors)."""

    dropped: np.ndarray
    representative: np.ndarray
    intercept: np.ndarray
    slope: np.ndarray
    spread: np.ndarray
    level: np.ndarray

    @classmethod
    def none(cls) -> Residuals:
        empty = np.zeros(0)
        return cls(empty.astype(np.int64), empty.astype(np.int64), empty, empty, empty, empty)

    @classmethod
    def fit(cls, signal: np.ndarray, names: tuple[str, ...], represented_by: dict[str, str]) -> Residuals:
        """Lines of each pruned signal on its representative over the baseline's samples (rows with either
        missing take no part), for the pairs whose relation holds over the baseline: the line fitted on either half
        explains at least STABLE_SHARE of the other half's variance. A correlation that came and went, or one a short
        quiet baseline made by chance, gives no residual; the pruned signal is still watched on its own."""
        position = {name: i for i, name in enumerate(names)}
        pairs = [(position[d], position[r]) for d, r in sorted(represented_by.items())
                 if d in position and r in position]
        if not pairs or len(signal) < 3:
            return cls.none()
        dropped, representative = (np.array(column, dtype=np.int64) for column in zip(*pairs))
        y, x = signal[:, dropped], signal[:, representative]
        half = len(signal) // 2
        stable = _holds_across(y[:half], x[:half], y[half:], x[half:]) & \
            _holds_across(y[half:], x[half:], y[:half], x[:half])
        if not stable.any():
            return cls.none()
        dropped, representative, y, x = dropped[stable], representative[stable], y[:, stable], x[:, stable]
        intercept, slope, spread, level = _lines(y, x)
        return cls(dropped, representative, intercept, slope, spread, level)

    def __len__(self) -> int:
        return len(self.dropped)

    def summary(self, signal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each residual's mean and standard deviation over the window's steps."""
        if not len(self):
            return np.zeros(0), np.zeros(0)
        residual = signal[:, self.dropped] - (self.intercept + self.slope * signal[:, self.representative])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return nanmean(residual, axis=0), nanstd(residual, axis=0)

    def to_json(self) -> dict:
        return {"dropped": self.dropped.tolist(), "representative": self.representative.tolist(),
                "intercept": self.intercept.tolist(), "slope": self.slope.tolist(),
                "spread": self.spread.tolist(), "level": self.level.tolist()}

    @classmethod
    def from_json(cls, data: dict | None) -> Residuals:
        if not data:
            return cls.none()
        absent = np.zeros(len(data["dropped"]))
        return cls(np.array(data["dropped"], dtype=np.int64), np.array(data["representative"], dtype=np.int64),
                   np.array(data["intercept"], dtype=np.float64), np.array(data["slope"], dtype=np.float64),
                   np.array(data.get("spread", absent), dtype=np.float64),
                   np.array(data.get("level", absent), dtype=np.float64))


def _lines(y: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per column, the least-squares line of y on x over rows where both are finite: intercept, slope, y's spread
    and mean (a representative that never varied gives a flat line at y's mean)."""
    valid = np.isfinite(x) & np.isfinite(y)
    count = np.fmax(valid.sum(axis=0), 1)
    x_mean = np.where(valid, x, 0).sum(axis=0) / count
    y_mean = np.where(valid, y, 0).sum(axis=0) / count
    covariance = np.where(valid, (x - x_mean) * (y - y_mean), 0).sum(axis=0)
    variance = np.where(valid, (x - x_mean) ** 2, 0).sum(axis=0)
    slope = np.divide(covariance, variance, out=np.zeros_like(covariance), where=variance > 0)
    spread = np.sqrt(np.where(valid, (y - y_mean) ** 2, 0).sum(axis=0) / count)
    return y_mean - slope * x_mean, slope, spread, y_mean


def _holds_across(y_fit: np.ndarray, x_fit: np.ndarray, y_test: np.ndarray, x_test: np.ndarray) -> np.ndarray:
    """Per column, whether the line fitted on one stretch leaves at most 1 − STABLE_SHARE of y's variance on another
    as squared error (an intercept that moved counts against it; False where the other stretch's y has no variance
    or either has too few rows)."""
    if len(y_fit) < 3 or len(y_test) < 3:
        return np.zeros(y_fit.shape[1], dtype=bool)
    intercept, slope, _, _ = _lines(y_fit, x_fit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        total = np.nanvar(y_test, axis=0)
        left = np.nanmean((y_test - (intercept + slope * x_test)) ** 2, axis=0)
    return (np.nan_to_num(total) > 0) & np.isfinite(left) & (left <= (1 - STABLE_SHARE) * total)

