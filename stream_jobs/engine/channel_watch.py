"""Every channel watched on its own, against its own noise: one model of normal per watched column, calibrated so
that a clean host opens about `risk` false findings a day whatever its number of channels.

Each column (a channel's window mean, its within-window spread, a pruned channel's residual from its
representative) keeps the median of its window statistic over the baseline and two noise scales, one per side: the
distance from the median to the baseline's `tail_share` and 1 − `tail_share` quantiles, in standard-normal units, so
a skewed channel (bursts above, a floor below) is measured on each side by what that side does; never below the
statistic's standard deviation (a quantile of a channel on one level never saw its rare excursions). A window departs on
a column when its statistic lies further from the median than `limit` noise scales, and further than the column's
practical floor in its own units where the unit is known (a few events for counters, `byte_floor` or
`memory_share_floor` of the host's memory for memory, `core_floor` for time busy, `count_floor` or `min_limit` times
the square root of the level (a count's natural spread, allowed as any noise is) for whole-number gauges,
`percent_floor` for shares, `byte_rate_floor` and `packet_rate_floor` per second for traffic counters); a table
without units has no floors, so its verdicts do not change when a column is shifted or scaled. Departures are told in limits: 1 is the edge, 2 twice as far.

`limit` is one number for the host, calibrated over all its columns at once: on the baseline, the largest
departure over columns in each window is the host's statistic, and the limit is the smallest one at which the
baseline opens no more than `risk` runs of departing windows a day (a run lasts the persistence). A baseline too
short to have seen that many days extrapolates with a tail fitted to its statistic (peaks over threshold), and a
short baseline widens the limit by Student's t over the number of independent windows it holds (30 overlapping
windows know less than 3,000) and, while the model was learned from less than the drift horizon, by how much
further a level may wander than the baseline saw (30 s of a host judge only large changes for 10 minutes). So 700
channels do not page 700 times as often as one, and a few minutes of baseline judge only large changes.

A column counts once it has departed for `persist_s` seconds running: one instant's burst lies in every window that
holds it, and `persist_s` is longer than the window. Until a streak has lasted `unconfirmed_s`, it counts only while
the window's median third departs too, so two bursts a few seconds apart do not count while a fault, which holds
the whole window out, does. Spreads count only when they rise (a channel that got steadier is not a fault by
itself); spreads must depart by `secondary_departure` limits. Models follow slow drift; a column out for
`adopt_after_s` seconds has changed level for good and is adopted.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

from stream_jobs.engine.calibration import Calibration, calibrated_limit, unseen_drift_widening
from stream_jobs.engine.channel_bands import ChannelBands
from stream_jobs.engine.kept_windows import KeptWindows
from stream_jobs.engine.windows import windows_for

IQR_TO_SIGMA = 1.349  # a normal distribution's interquartile range in standard deviations
# The history a column's model is learned again from holds at least this many windows, whatever the stride.
MIN_HISTORY_WINDOWS = 200


@dataclass(frozen=True)
class WatchSettings:
    """How each column's model of normal is learned and how far and how long a column must depart to count.
    Durations are seconds, floors are in the channel's own units."""

    tail_share: float = 0.01
    min_limit: float = 2.0
    min_events: float = 5.0
    byte_floor: float = 16 * 2**20
    memory_share_floor: float = 0.0025
    core_floor: float = 0.05
    count_floor: float = 2.0
    percent_floor: float = 1.0
    byte_rate_floor: float = 2**20
    packet_rate_floor: float = 100.0
    residual_floor: float = 0.5
    departure: float = 1.0
    secondary_departure: float = 1.5
    persist_s: float = 4.0
    unconfirmed_s: float = 10.0
    confirm_share: float = 1.0
    drift_horizon_s: float = 600.0
    history_every_s: float = 5.0
    history_span_s: float = 720.0
    adopt_after_s: float = 600.0
    adopt_after_window_lengths: float = 10.0
    adopt_share: float = 0.8

    def __post_init__(self):
        if not 0 < self.tail_share < 0.5:
            raise ValueError(f"tail_share is {self.tail_share}; expected between 0 and 0.5")
        if not 0 < self.adopt_share < 1:
            raise ValueError(f"adopt_share is {self.adopt_share}; expected between 0 and 1")
        if not 0 < self.persist_s < self.adopt_after_s:
            raise ValueError(f"persist_s {self.persist_s} must be > 0 and below adopt_after_s {self.adopt_after_s}")
        if self.history_every_s <= 0 or self.history_span_s < 10 * self.history_every_s:
            raise ValueError("history_every_s must be > 0 and history_span_s at least 10 times it")
        if not 0 < self.confirm_share <= 1:
            raise ValueError(f"confirm_share is {self.confirm_share}; expected above 0 and at most 1")
        floors = ("residual_floor", "min_events", "byte_floor", "memory_share_floor", "count_floor", "core_floor",
                  "percent_floor", "byte_rate_floor", "packet_rate_floor")
        if not (self.departure > 0 and self.min_limit > 0 and all(getattr(self, f) >= 0 for f in floors)):
            raise ValueError(f"departure and min_limit must be > 0; {', '.join(floors)} ≥ 0")


@dataclass(frozen=True)
class WatchTiming:
    """The watch's durations as window counts at one stride (see windows_for)."""

    persist: int
    unconfirmed: int
    history_stride: int
    history_windows: int
    adopt_after: int
    drift_horizon: int

    @classmethod
    def of(cls, settings: WatchSettings, stride_s: float, window_s: float = 0.0) -> WatchTiming:
        """Window counts at this stride; adoption waits `adopt_after_s` or `adopt_after_window_lengths` windows'
        lengths, whichever is longer (a level held for a few of its windows has not been seen to last)."""
        windows = lambda seconds: windows_for(seconds, stride_s)  # noqa: E731
        adopt_s = max(settings.adopt_after_s, settings.adopt_after_window_lengths * window_s)
        persist, history_stride = windows(settings.persist_s), windows(settings.history_every_s)
        return cls(persist, max(persist, windows(settings.unconfirmed_s)), history_stride,
                   max(MIN_HISTORY_WINDOWS, windows(settings.history_span_s) // history_stride),
                   max(persist + 1, windows(adopt_s)), windows(settings.drift_horizon_s))


@dataclass(frozen=True, eq=False)
class WatchVerdict:
    """One window on every column: signed departure in allowed distances, z in noise scales, runs of departing
    windows, which columns have persisted (the window's finding), and the model it was judged against."""

    departure: np.ndarray
    z: np.ndarray
    streak: np.ndarray
    persisted: np.ndarray
    bands: ChannelBands | None = None

    @property
    def flagged(self) -> bool:
        return bool(self.persisted.any())

    @property
    def severity(self) -> float:
        """The largest |departure| among persisted columns (0 when none)."""
        return float(np.abs(self.departure[self.persisted]).max(initial=0.0))

    def silenced(self) -> WatchVerdict:
        """The same departures with nothing persisted (the paper's mode, where only the trio flags)."""
        return WatchVerdict(self.departure, self.z, self.streak, np.zeros_like(self.persisted), self.bands)


class ChannelWatch:
    """The model of every column of one host, persistence runs, and the history the model is refreshed from."""

    def __init__(self, event_floor: np.ndarray, settings: WatchSettings = WatchSettings(),
                 secondary: np.ndarray | None = None, rising_only: np.ndarray | None = None,
                 calibration: Calibration = Calibration(), guards: np.ndarray | None = None):
        self.event_floor = np.asarray(event_floor, dtype=np.float64)
        self.guards = np.full((len(self.event_floor), 0), -1, dtype=np.int64) if guards is None else \
            np.asarray(guards, dtype=np.int64).reshape(len(self.event_floor), -1)
        self.settings = settings
        self.calibration = calibration
        self.timing = WatchTiming.of(settings, calibration.stride_s, calibration.window_s)
        secondary = np.zeros(len(self.event_floor), dtype=bool) if secondary is None else np.asarray(secondary, bool)
        self.threshold = np.where(secondary, settings.secondary_departure, settings.departure)
        rising = np.zeros(len(self.event_floor), dtype=bool) if rising_only is None else np.asarray(rising_only, bool)
        self.rising_only = rising
        self.falling_threshold = np.where(rising, np.inf, self.threshold)
        self.bands: ChannelBands | None = None
        self.streak = np.zeros(len(self.event_floor), dtype=np.int64)
        self.out_share = np.zeros(len(self.event_floor))
        self._share_step = 1.0 - (1.0 - settings.adopt_share) ** (1.0 / self.timing.adopt_after)
        self.kept = KeptWindows(self.timing.history_windows,
                                max(2, self.timing.adopt_after // self.timing.history_stride))
        self._windows = 0
        self.last_observed = np.zeros(len(self.event_floor))
        self._unwidened, self.learned_s, self._judged_at_fit = math.inf, 0.0, 0

    def fit(self, baseline: np.ndarray, trim: float = 0.0) -> ChannelWatch:
        """Learn every column's model and the host's limit from the baseline's windows (windows × columns, NaN
        where a column was not computed); `trim` as in ChannelBands.fit, and that share of the most unusual
        windows is left out of the calibration."""
        stats = np.asarray(baseline, dtype=np.float64)
        independent = max(1, round(self.calibration.window_s / self.calibration.stride_s))
        bands = ChannelBands.fit(stats, self.event_floor, self.settings, trim,
                                 horizon_rows=self.timing.drift_horizon, independent_rows=independent)
        self._unwidened = self._calibrate(bands, stats, 1, trim)
        self.learned_s = stats.shape[0] * self.calibration.stride_s
        self._judged_at_fit = self._windows
        self.bands = bands.with_limit(self._widened())
        self.out_share[:] = 0.0
        self.kept.seed(stats[::-self.timing.history_stride][::-1])
        self.streak[:] = 0
        return self

    def _calibrate(self, bands: ChannelBands, stats: np.ndarray, spacing: int, trim: float) -> float:
        """The host's limit for these bands on these baseline rows (see calibrated_limit)."""
        if stats.shape[0] == 0:
            return math.inf
        raw = bands.exceeding_floor(stats)
        raw = np.where(self.rising_only & (stats < bands.median), 0.0, raw) / self.threshold
        statistic = np.nanmax(np.where(np.isfinite(raw), raw, 0.0), axis=1, initial=0.0)
        if trim > 0 and statistic.size:
            statistic = np.where(statistic > np.quantile(statistic, 1 - trim), 0.0, statistic)
        persist_rows = max(1, math.ceil(self.timing.persist / spacing))
        return calibrated_limit(statistic, persist_rows, spacing, self.calibration, self.settings.min_limit)

    def _widened(self) -> float:
        """The calibrated limit, widened while what the model was learned from spans less than the drift horizon
        (see unseen_drift_widening), never below `min_limit`."""
        widening = unseen_drift_widening(self.learned_s, self.settings.drift_horizon_s)
        return max(self._unwidened * widening, self.settings.min_limit) if widening > 1 else self._unwidened

    @property
    def widening(self) -> float:
        """How many times wider than calibrated the limit is now, for having learned less than the drift horizon."""
        return unseen_drift_widening(self.learned_s, self.settings.drift_horizon_s)

    @property
    def limit(self) -> float:
        return self.bands.limit if self.bands is not None else math.inf

    def _confirmed(self, departure: np.ndarray, inner: np.ndarray) -> np.ndarray:
        """True where no inner statistic is given, or where it lies beyond `confirm_share` of the way to departing on
        the same side as the window's own: the median third, a third of the window's samples, is noisier than the
        window's mean, and need only show that the departure is not one part's."""
        inner_departure = self.bands.departure(inner) / self.settings.confirm_share
        same_side = np.sign(inner_departure) == np.sign(departure)
        return np.isnan(inner) | (same_side & self._departing(inner_departure))

    def _guarded(self, departing: np.ndarray) -> np.ndarray:
        """True for columns whose guard columns depart in the same window: what they measure is only defined while
        their guards stay within their bands (a residual from a line whose representative left the range the line
        was fitted on says nothing of its own channel)."""
        if self.guards.shape[1] == 0:
            return np.zeros(len(departing), dtype=bool)
        padded = np.append(departing, False)
        return padded[self.guards].any(axis=1)

    def _departing(self, departure: np.ndarray) -> np.ndarray:
        """Columns out by their threshold: above, or below unless they count only when they rise."""
        return (departure >= self.threshold) | (departure <= -self.falling_threshold)

    def restore(self, bands: ChannelBands) -> None:
        """Take over a saved model (a worker restarting); persistence runs start from zero."""
        self.bands = bands
        self._unwidened, self.learned_s = bands.limit, math.inf
        self.streak[:] = 0
        self.out_share[:] = 0.0

    def judge(self, values: np.ndarray, inner: Callable[[], np.ndarray | None] | None = None) -> WatchVerdict:
        """Judge one window's columns; `inner()` gives each column's statistic taken robustly within the window
        (its median third; NaN where there is none; asked for only when a streak needs it): a streak shorter
        than the confirmation time counts only while that departs too, on the same side."""
        if self.bands is None:
            raise RuntimeError("ChannelWatch.judge called before fit")
        self.last_observed = np.asarray(values, dtype=np.float64)
        departure = self.bands.departure(values)
        departing = self._departing(departure)
        departing &= ~self._guarded(departing)
        self.streak = np.where(departing, self.streak + 1, 0)
        self.out_share += self._share_step * (departing - self.out_share)
        persisted = self.streak >= self.timing.persist
        unconfirmed = persisted & (self.streak < self.timing.unconfirmed)
        inner_values = inner() if inner is not None and unconfirmed.any() else None
        if inner_values is not None:
            persisted &= ~unconfirmed | self._confirmed(departure, np.asarray(inner_values, dtype=np.float64))
        verdict = WatchVerdict(departure, self.bands.z(values), self.streak.copy(), persisted, self.bands)
        self._remember(values, departing)
        self._adopt(self.out_share >= self.settings.adopt_share - 1e-9)
        return verdict

    def _adopt(self, changed: np.ndarray) -> None:
        """Columns that left their model for good take in their recent level: the median moves to it, and the
        allowed distances widen to hold both what was normal and what is now, so a return is not a new departure."""
        if not changed.any() or self.kept.recent_count < 2:
            return
        recent = self.kept.recent()[:, changed]
        fresh = ChannelBands.fit(recent, self.event_floor[changed], self.settings)
        old, limit = self.bands, self.bands.limit
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            high = np.fmax(np.nanmax(recent, axis=0), old.median[changed] + limit * old.above[changed])
            low = np.fmin(np.nanmin(recent, axis=0), old.median[changed] - limit * old.below[changed])
        median, above, below = old.median.copy(), old.above.copy(), old.below.copy()
        median[changed] = fresh.median
        above[changed] = np.fmax(fresh.above, (high - fresh.median) / limit)
        below[changed] = np.fmax(fresh.below, (fresh.median - low) / limit)
        self.bands = ChannelBands(median, above, below, old.floor, limit)
        self.streak[changed] = 0
        self.out_share[changed] = 0.0

    def _remember(self, values: np.ndarray, departing: np.ndarray) -> None:
        """Keep every `history_stride`-th window: for the history only the columns within their limits, for
        adoption all of them."""
        self._windows += 1
        if self._windows % self.timing.history_stride == 0:
            self.kept.remember(values, departing)

    def refit(self) -> bool:
        """Follow slow drift: each column's median is learned again from the history, and its noise scales widen to
        the history's where that is wider (a history of a few hundred windows measures a tail less well than the
        baseline, so it never narrows one); a column with too few windows in it keeps its own, and the limit stays
        as calibrated but for the widening of a model learned from less than the drift horizon, which narrows as the
        host is watched longer. The caller decides when, so that a replay refits where the live run did."""
        if self.kept.history_count < 10:
            return False
        history = self.kept.history()
        fresh = ChannelBands.fit(history, self.event_floor, self.settings, limit=self.bands.limit,
                                 horizon_rows=max(1, self.timing.drift_horizon // self.timing.history_stride))
        keep = np.isfinite(history).sum(axis=0) < 10
        median = np.where(keep, self.bands.median, fresh.median)
        above = np.where(keep, self.bands.above, np.fmax(self.bands.above, fresh.above))
        below = np.where(keep, self.bands.below, np.fmax(self.bands.below, fresh.below))
        self.learned_s += (self._windows - self._judged_at_fit) * self.calibration.stride_s
        self._judged_at_fit = self._windows
        self.bands = ChannelBands(median, above, below, self.bands.floor, self._widened())
        return True

    @property
    def longest_run(self) -> int:
        """The longest current run of departing windows among the columns."""
        return int(self.streak.max(initial=0))

