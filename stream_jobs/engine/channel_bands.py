"""Each watched column's model of normal: the median of its window statistic, a noise scale on each side and a
floor in its own units, and the host's calibrated limit in noise scales (see channel_watch for how they are
learned, calibrated and followed)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import ndtri

from stream_jobs.engine.column_stats import column_nanmedians, column_quantiles, nanstd
from stream_jobs.engine.wander import trimmed, wander

if TYPE_CHECKING:
    from stream_jobs.engine.channel_watch import WatchSettings


def finite_ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator where the denominator is positive and the ratio finite; 0 elsewhere (a column with
    no known value or no allowed distance cannot depart)."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        ratio = numerator / denominator
    return np.where((denominator > 0) & np.isfinite(ratio), ratio, 0.0)


@dataclass(frozen=True, eq=False)
class ChannelBands:
    """Each column's model of normal: the median of its window statistic over the baseline, its noise scale above
    and below (σ-equivalents), its floor in its own units, and the host's calibrated limit in noise scales."""

    median: np.ndarray
    above: np.ndarray
    below: np.ndarray
    floor: np.ndarray
    limit: float = 1.0

    @classmethod
    def fit(cls, stats: np.ndarray, floor: np.ndarray, settings: WatchSettings, trim: float = 0.0,
            limit: float = 1.0, horizon_rows: int = 0, independent_rows: int = 1) -> ChannelBands:
        """The model of a baseline's window statistics (windows × columns, in time order). `trim` measures the
        noise at a less extreme quantile, and the spread without that share of each column's most extreme values,
        for a baseline that may itself hold anomalies (a run judged against itself). A column that wanders (autocorrelated, drifting) is allowed what it wanders over `horizon_rows`
        rows, the age the model's median reaches before it is learned again. A column read in fewer than two
        windows has no model: it is not judged."""
        tail = max(settings.tail_share, trim / 2)
        stats = np.asarray(stats, dtype=np.float64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            median = column_nanmedians(stats)
            low, high = column_quantiles(stats, [tail, 1 - tail])
            spread = nanstd(trimmed(stats, trim / 2) if trim > 0 else stats, axis=0)
        spread_floor = np.fmax(np.nan_to_num(spread), wander(stats, horizon_rows, independent_rows))
        unit = ndtri(1 - tail)
        above = np.fmax((high - median) / unit, spread_floor)
        below = np.fmax((median - low) / unit, spread_floor)
        unknown = np.isfinite(stats).sum(axis=0) < 2
        median = np.where(unknown, np.nan, median)
        return cls(median, above, below, np.asarray(floor, dtype=np.float64), float(limit))

    def with_limit(self, limit: float) -> ChannelBands:
        return ChannelBands(self.median, self.above, self.below, self.floor, float(limit))

    def carried(self, source: np.ndarray, floor: np.ndarray) -> ChannelBands:
        """Bands for other columns, each taken from column `source` of these (unknown where it is −1), with `floor`."""
        known = source >= 0
        fields = []
        for values in (self.median, self.above, self.below):
            taken = np.full(len(source), np.nan)
            taken[known] = values[source[known]]
            fields.append(taken)
        return ChannelBands(*fields, np.asarray(floor, dtype=np.float64), self.limit)

    @property
    def sigma(self) -> np.ndarray:
        """One noise scale per column, for telling: the mean of the two sides'."""
        return 0.5 * (self.above + self.below)

    def z(self, values: np.ndarray) -> np.ndarray:
        """(value − median) in the noise scale of its side (where a floor is wider than the limit's noise, the floor
        over the limit), uncapped; 0 where unknown or where nothing is allowed."""
        offset = np.asarray(values, dtype=np.float64) - self.median
        return finite_ratio(offset, np.fmax(np.where(offset >= 0, self.above, self.below), self.floor / self.limit))

    def departure(self, values: np.ndarray) -> np.ndarray:
        """How far each value lies from the median, in allowed distances: the limit times the side's noise scale,
        or the floor where that is larger. |departure| ≥ 1 departs; 0 where unknown or where nothing is allowed."""
        offset = np.asarray(values, dtype=np.float64) - self.median
        return finite_ratio(offset, np.fmax(self.limit * np.where(offset >= 0, self.above, self.below), self.floor))

    def exceeding_floor(self, values: np.ndarray) -> np.ndarray:
        """Each column's |z| where its offset also clears its floor (a column that cannot depart at any limit
        is 0): the statistic the host's limit is calibrated on."""
        offset = np.asarray(values, dtype=np.float64) - self.median
        z = finite_ratio(np.abs(offset), np.where(offset >= 0, self.above, self.below))
        return np.where(np.abs(offset) >= self.floor, z, 0.0)

    def shows(self, values: np.ndarray, columns: np.ndarray, rising_only: np.ndarray) -> bool:
        """Whether any of `columns` lies beyond a noise scale and its floor from its median, above it where it
        counts only when it rises: a change the column itself shows, in what matters in its units."""
        offset = np.asarray(values, dtype=np.float64)[columns] - self.median[columns]
        scale = np.where(offset >= 0, self.above[columns], self.below[columns])
        shown = np.isfinite(offset) & (np.abs(offset) >= np.fmax(scale, self.floor[columns])) & (np.abs(offset) > 0)
        return bool((shown & ((offset > 0) | ~rising_only[columns])).any())

    def to_json(self) -> dict:
        listed = lambda values: [None if not np.isfinite(v) else float(v) for v in values]
        return {"median": listed(self.median), "above": listed(self.above), "below": listed(self.below),
                "floor": listed(self.floor), "limit": self.limit}

    @classmethod
    def from_json(cls, data: dict) -> ChannelBands:
        array = lambda name: np.array([np.nan if v is None else v for v in data[name]], dtype=np.float64)
        return cls(array("median"), array("above"), array("below"), np.nan_to_num(array("floor")),
                   float(data["limit"]))
