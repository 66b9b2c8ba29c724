"""Every channel watched on its own: a per-channel envelope learned from the baseline's window means, followed as it
drifts, with effect floors in the channel's own units, and persistence before a channel counts as departed.

The multivariate detectors see only the channels selection keeps, and average a departure over all of them; an
operator's fault often moves one or two channels far (a burner on one container's CPU time, a flood on one
protocol counter). Each channel therefore keeps the band its window means stayed in over the baseline (low and high
quantiles, so rare baseline excursions such as a checkpoint's writes are inside it) and its median and robust
spread. A window departs on a channel when its mean leaves the band by at least the band's own width (floored at a
share of the channel's level, for counters that never moved at a minimum number of events per window, and for memory
levels, in bytes or pages, at `byte_floor`, so that a process starting or a little cache is not an event, for busy
counters of time (CPU, stall or idle time, whose rate is in cores) at `core_floor` cores, so that a few more of a
kernel's 10 ms ticks in a window are not one, for gauges that count things (only whole numbers in the baseline:
sockets, tasks) at `count_floor` things, and for shares in percent (of time stalled, of a GPU busy) at
`percent_floor` points, so that a tenth of a percent more I/O stall is not one), so noise in a near-constant
channel is not an event; a channel's spread within a window and its residual from a correlated channel
are floored at `spread_relative_floor` of its level, so a large gauge that stops wobbling, or drifts by a few
kilobytes from its fit, is not one either. Secondary columns (a channel's within-window spread, a residual from a
correlated channel) are noisier and must leave their band by `secondary_departure` widths; spreads count only when
they rise (a channel that got steadier is not a fault by itself: its level tells when work stops). A residual's
width is at least `residual_floor` of its pruned channel's own spread over the baseline, so a small change in the ratio of
two tightly coupled channels (bytes per segment) is not an event. A channel counts only once it has departed in
`persist_windows` consecutive windows: one instant's burst appears in every overlapping window that holds it, never
in more. Two bursts a few seconds apart hold the window means out for twice as long, so a streak counts only while
the window's median second departs too (a fault holds every second out), or once it has lasted `unconfirmed_after`
windows (bursts that go on, a few a window).

A busy channel's band spans the brief peaks of its baseline (a step's burst of CPU, an evaluation pass), so a fault
that holds the channel at such a level for half a minute stays inside it. Each channel therefore also keeps a
sustained band: the highest level its baseline held for `sustained_windows` consecutive windows and the lowest (from
a baseline of at least `sustained_baseline` windows: a shorter one has not seen what the host holds), with a width of
at least `sustained_relative_floor` of the channel's level, since levels held for seconds vary more than the baseline's
few minutes show. A channel that stays beyond that band, by the same widths, for `sustained_windows` windows counts
too; one that stays beyond it for `adopt_after` windows gets its band widened to its plain band.

Bands follow slow drift: every `history_stride`-th window is kept with the channels that stayed in their bands, and
the bands are learned again from them whenever the host's baseline is refreshed, so page cache that grows over hours
moves the band with it while a fault, which departs, does not become normal while it lasts. A channel that has stayed
out of its band for `adopt_after` windows (or for `adopt_share` of about as many, returning now and then) has changed
level for good (a new job phase, a configuration change): its band is widened to
take in the new level, and the channel stops counting.
"""

from __future__ import annotations

import warnings
from collections import deque
from dataclasses import dataclass
from typing import Callable

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

MAD_TO_SIGMA = 1.4826
IQR_TO_SIGMA = 1.349  # a normal distribution's interquartile range in standard deviations


@dataclass(frozen=True)
class WatchSettings:
    """How bands are learned and how far and how long a channel must leave its band to count."""

    low_quantile: float = 0.005
    high_quantile: float = 0.995
    relative_floor: float = 0.05
    spread_relative_floor: float = 0.01
    residual_floor: float = 0.5
    min_events: float = 5.0
    byte_floor: float = 16 * 2**20
    core_floor: float = 0.05
    count_floor: float = 2.0
    percent_floor: float = 1.0
    departure: float = 1.0
    secondary_departure: float = 1.5
    persist_windows: int = 4
    unconfirmed_after: int = 10
    sustained_windows: int = 16
    sustained_baseline: int = 300
    sustained_relative_floor: float = 1.0
    busy_floors: float = 10.0
    history_stride: int = 5
    history_windows: int = 720
    adopt_after: int = 600
    adopt_share: float = 0.8

    def __post_init__(self):
        if not 0 <= self.low_quantile < self.high_quantile <= 1:
            raise ValueError(f"low_quantile {self.low_quantile} and high_quantile {self.high_quantile} must satisfy "
                             "0 ≤ low < high ≤ 1")
        if not 0 < self.adopt_share < 1:
            raise ValueError(f"adopt_share {self.adopt_share} must lie between 0 and 1")
        if self.adopt_after <= self.persist_windows:
            raise ValueError(f"adopt_after {self.adopt_after} must exceed persist_windows {self.persist_windows}")
        if self.persist_windows < 1 or self.history_stride < 1 or self.history_windows < 10:
            raise ValueError("persist_windows and history_stride must be ≥ 1, history_windows ≥ 10")
        if not self.persist_windows < self.sustained_windows < self.adopt_after:
            raise ValueError(f"sustained_windows {self.sustained_windows} must lie between persist_windows "
                             f"{self.persist_windows} and adopt_after {self.adopt_after}")
        if not (self.departure > 0 and self.relative_floor >= 0 and self.residual_floor >= 0 and self.min_events >= 0
                and self.byte_floor >= 0 and self.count_floor >= 0 and self.core_floor >= 0
                and self.percent_floor >= 0):
            raise ValueError("departure must be > 0; relative_floor, residual_floor, min_events, byte_floor, "
                             "count_floor, core_floor and percent_floor ≥ 0")


@dataclass(frozen=True, eq=False)
class ChannelBands:
    """Each channel's baseline band [low, high], the width a departure is measured in, median and robust spread."""

    low: np.ndarray
    high: np.ndarray
    width: np.ndarray
    median: np.ndarray
    sigma: np.ndarray

    @classmethod
    def fit(cls, means: np.ndarray, event_floor: np.ndarray, settings: WatchSettings, trim: float = 0.0) -> ChannelBands:
        """Bands of window means (windows × channels); `event_floor` is each channel's smallest meaningful width in
        its own units (0 for none). A channel never read in the baseline gets an empty band: it is not judged.
        `trim` leaves that share of each channel's most extreme windows out of its band (half on each side), for a
        baseline that may itself hold anomalies, such as a run judged against itself."""
        low_quantile = max(settings.low_quantile, trim / 2)
        high_quantile = min(settings.high_quantile, 1 - trim / 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            low, high = np.nanquantile(means, [low_quantile, high_quantile], axis=0)
            median = np.nanmedian(means, axis=0)
            sigma = MAD_TO_SIGMA * np.nanmedian(np.abs(means - median), axis=0)
        width = np.fmax(np.fmax(high - low, settings.relative_floor * np.abs(median)), event_floor)
        width = np.where(width > 0, width, np.nan)
        sigma = np.fmax(sigma, width / 6.0)
        return cls(low, high, width, median, sigma)

    def sustained(self, means: np.ndarray, event_floor: np.ndarray, settings: WatchSettings, trim: float = 0.0,
                  stride: int = 1) -> ChannelBands | None:
        """The band of levels a baseline's window means (rows × channels, one row every `stride` windows) held for
        `settings.sustained_windows` windows in a row: from the lowest level they stayed under to the highest they
        stayed over, inside this band; None for a baseline shorter than `settings.sustained_baseline` windows."""
        run = max(2, -(-settings.sustained_windows // stride))
        if len(means) < run or len(means) * stride < settings.sustained_baseline:
            return None
        runs = sliding_window_view(means, run, axis=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            high = np.nanquantile(np.nanmin(runs, axis=2), 1 - trim / 2, axis=0)
            low = np.nanquantile(np.nanmax(runs, axis=2), trim / 2, axis=0)
        high, low = np.fmin(high, self.high), np.fmax(low, self.low)
        width = np.fmax(np.fmax(high - low, settings.sustained_relative_floor * np.abs(self.median)), event_floor)
        busy = np.abs(self.median) > settings.busy_floors * event_floor
        return ChannelBands(low, high, np.where(busy & (width > 0), width, np.nan), self.median, self.sigma)

    def departure(self, means: np.ndarray) -> np.ndarray:
        """How far each channel's mean lies outside its band, in band widths: positive above, negative below, 0
        inside, and 0 where either side is unknown."""
        with np.errstate(invalid="ignore"):
            above = (means - self.high) / self.width
            below = (means - self.low) / self.width
        return np.nan_to_num(np.where(above > 0, above, np.where(below < 0, below, 0.0)), nan=0.0)

    def z(self, means: np.ndarray) -> np.ndarray:
        """(mean − median) / robust spread, uncapped; 0 where unknown."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.nan_to_num((means - self.median) / self.sigma, nan=0.0, posinf=0.0, neginf=0.0)

    def to_json(self) -> dict:
        return {name: [None if not np.isfinite(v) else float(v) for v in getattr(self, name)]
                for name in ("low", "high", "width", "median", "sigma")}

    @classmethod
    def from_json(cls, data: dict) -> ChannelBands:
        return cls(*(np.array([np.nan if v is None else v for v in data[name]], dtype=np.float64)
                     for name in ("low", "high", "width", "median", "sigma")))


@dataclass(frozen=True, eq=False)
class WatchVerdict:
    """One window on every channel: signed departure in band widths, z, runs of departing windows, which channels
    have persisted (the window's finding), and the bands it was judged against (a band may widen right after)."""

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
        """The largest |departure| among persisted channels (0 when none)."""
        return float(np.abs(self.departure[self.persisted]).max(initial=0.0))


class ChannelWatch:
    """Bands for every channel of one host, persistence runs, and the history the bands are refreshed from."""

    def __init__(self, event_floor: np.ndarray, settings: WatchSettings = WatchSettings(),
                 secondary: np.ndarray | None = None, rising_only: np.ndarray | None = None):
        self.event_floor = np.asarray(event_floor, dtype=np.float64)
        self.settings = settings
        secondary = np.zeros(len(self.event_floor), dtype=bool) if secondary is None else np.asarray(secondary, bool)
        self.threshold = np.where(secondary, settings.secondary_departure, settings.departure)
        rising = np.zeros(len(self.event_floor), dtype=bool) if rising_only is None else np.asarray(rising_only, bool)
        self.falling_threshold = np.where(rising, np.inf, self.threshold)
        self.bands: ChannelBands | None = None
        self.sustained: ChannelBands | None = None
        self.streak = np.zeros(len(self.event_floor), dtype=np.int64)
        self.sustained_streak = np.zeros(len(self.event_floor), dtype=np.int64)
        self.out_share = np.zeros(len(self.event_floor))
        self.held_out_share = np.zeros(len(self.event_floor))
        self._share_step = 1.0 - (1.0 - settings.adopt_share) ** (1.0 / settings.adopt_after)
        self._history: deque = deque(maxlen=max(10, settings.history_windows // settings.history_stride))
        self._recent: deque = deque(maxlen=max(2, settings.adopt_after // settings.history_stride))
        self._windows = 0
        self.last_observed = np.zeros(len(self.event_floor))

    def fit(self, baseline_means: np.ndarray, trim: float = 0.0) -> ChannelWatch:
        """Learn the bands from the baseline's window means (windows × channels), `trim` as in ChannelBands.fit."""
        means = np.asarray(baseline_means, dtype=np.float64)
        self.bands = ChannelBands.fit(means, self.event_floor, self.settings, trim)
        self.sustained = self.bands.sustained(means, self.event_floor, self.settings, trim)
        self.sustained_streak[:] = 0
        self.out_share[:], self.held_out_share[:] = 0.0, 0.0
        self._history.clear()
        self._history.extend(np.asarray(baseline_means, dtype=np.float32)[::-self.settings.history_stride][::-1])
        self.streak[:] = 0
        return self

    def _confirmed(self, departure: np.ndarray, inner: np.ndarray) -> np.ndarray:
        """True where no inner statistic is given, or where it departs on the same side as the window's own."""
        inner_departure = self.bands.departure(inner)
        same_side = np.sign(inner_departure) == np.sign(departure)
        return np.isnan(inner) | (same_side & self._departing(inner_departure))

    def _departing(self, departure: np.ndarray) -> np.ndarray:
        """Columns out by their threshold: above their band, or below it unless they count only when they rise."""
        return (departure >= self.threshold) | (departure <= -self.falling_threshold)

    def restore(self, bands: ChannelBands, sustained: ChannelBands | None = None) -> None:
        """Take over saved bands (a worker restarting); persistence runs start from zero."""
        self.bands, self.sustained = bands, sustained
        self.streak[:] = 0
        self.sustained_streak[:] = 0
        self.out_share[:], self.held_out_share[:] = 0.0, 0.0

    def judge(self, means: np.ndarray, inner: Callable[[], np.ndarray | None] | None = None) -> WatchVerdict:
        """Judge one window's channel means; windows that do not depart join the history, and the bands are learned
        again from it every `refit_every` windows. `inner()` gives each column's statistic taken robustly within the
        window (NaN where there is none; asked for only when a streak needs it): a column that has departed for a
        streak counts only while that departs too, on the same side, so a burst of a second, or two of them a few
        seconds apart, which hold the window means out for a streak, do not count, while a fault that holds the whole
        window out counts as soon as before; bursts that go on (a streak of `unconfirmed_after` windows) count all
        the same."""
        if self.bands is None:
            raise RuntimeError("ChannelWatch.judge called before fit")
        self.last_observed = np.asarray(means, dtype=np.float64)
        departure = self.bands.departure(means)
        departing = self._departing(departure)
        self.streak = np.where(departing, self.streak + 1, 0)
        self.out_share += self._share_step * (departing - self.out_share)
        persisted = self.streak >= self.settings.persist_windows
        unconfirmed = persisted & (self.streak < self.settings.unconfirmed_after)
        values = inner() if inner is not None and unconfirmed.any() else None
        if values is not None:
            persisted &= ~unconfirmed | self._confirmed(departure, np.asarray(values, dtype=np.float64))
        if self.sustained is not None:
            held = self.sustained.departure(means)
            held_departing = self._departing(held)
            self.sustained_streak = np.where(held_departing, self.sustained_streak + 1, 0)
            self.held_out_share += self._share_step * (held_departing - self.held_out_share)
            held_long = (self.sustained_streak >= self.settings.sustained_windows) & ~persisted
            departure, persisted = np.where(held_long, held, departure), persisted | held_long
            departing = departing | held_departing
        verdict = WatchVerdict(departure, self.bands.z(means), np.fmax(self.streak, self.sustained_streak), persisted,
                               self.bands)
        self._remember(means, departing)
        self._adopt(self._changed_for_good(self.out_share))
        self._widen_sustained(self._changed_for_good(self.held_out_share))
        return verdict

    def _changed_for_good(self, out_share: np.ndarray) -> np.ndarray:
        """Channels whose recent share of windows out of a band (a moving average that `adopt_after` windows out in a
        row bring to `adopt_share`) reached `adopt_share`: out for `adopt_after` windows running, or for somewhat
        longer with brief returns. A level that flickers back into its band now and then has changed as much as one
        that never does, and would otherwise hold its incident open for good."""
        return out_share >= self.settings.adopt_share - 1e-9

    def _adopt(self, changed: np.ndarray) -> None:
        """Widen the bands of channels that left them for good to take in their recent level."""
        if not changed.any() or len(self._recent) < 2:
            return
        recent = np.asarray(self._recent, dtype=np.float64)[:, changed]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            recent_low, recent_high = np.nanquantile(recent, [self.settings.low_quantile,
                                                              self.settings.high_quantile], axis=0)
        low, high, width = self.bands.low.copy(), self.bands.high.copy(), self.bands.width.copy()
        median = self.bands.median.copy()
        low[changed], high[changed] = np.fmin(low[changed], recent_low), np.fmax(high[changed], recent_high)
        width[changed] = np.fmax(width[changed], high[changed] - low[changed])
        median[changed] = np.nanmedian(recent, axis=0)
        self.bands = ChannelBands(low, high, width, median, np.fmax(self.bands.sigma, width / 6.0))
        self.streak[changed] = 0
        self.out_share[changed] = 0.0
        self._widen_sustained(changed)

    def _widen_sustained(self, changed: np.ndarray) -> None:
        """Give channels that stayed beyond their sustained band for good their plain band as sustained band."""
        if self.sustained is not None and changed.any():
            self.sustained = _merged(~changed, self.sustained, self.bands)
            self.sustained_streak[changed] = 0
            self.held_out_share[changed] = 0.0

    def _remember(self, means: np.ndarray, departing: np.ndarray) -> None:
        """Keep every `history_stride`-th window: for the history only the channels that stayed in their bands,
        for adoption all of them."""
        self._windows += 1
        if self._windows % self.settings.history_stride == 0:
            self._recent.append(np.asarray(means, dtype=np.float32))
            self._history.append(np.where(departing, np.nan, means).astype(np.float32))

    def refit(self) -> bool:
        """Learn the bands again from the history (a channel with too few windows in it keeps its band); the
        caller decides when, so that a replay refits where the live run did."""
        if len(self._history) < 10:
            return False
        history = np.asarray(self._history, dtype=np.float64)
        fresh = ChannelBands.fit(history, self.event_floor, self.settings)
        keep = np.isfinite(history).sum(axis=0) < 10
        self.bands = _merged(keep, self.bands, fresh)
        if self.sustained is not None:
            held = fresh.sustained(history, self.event_floor, self.settings, stride=self.settings.history_stride)
            self.sustained = _merged(keep, self.sustained, held) if held is not None else self.sustained
        return True

    @property
    def longest_run(self) -> int:
        """The longest current run of departing windows among the channels, on either band."""
        return int(max(self.streak.max(initial=0), self.sustained_streak.max(initial=0)))


def _merged(keep: np.ndarray, kept: ChannelBands, fresh: ChannelBands) -> ChannelBands:
    """`kept`'s bands where `keep` is true, `fresh`'s elsewhere."""
    return ChannelBands(*(np.where(keep, getattr(kept, name), getattr(fresh, name))
                          for name in ("low", "high", "width", "median", "sigma")))


def counts_things(signal: np.ndarray, gauges: np.ndarray) -> np.ndarray:
    """True for the gauges whose every baseline sample (rows of `signal`) is a whole number: a count of things, which
    moves by one thing at a time, so that a change of one or two is the gauge's resolution, not an effect."""
    with np.errstate(invalid="ignore"):
        whole = np.where(np.isfinite(signal), signal == np.round(signal), True).all(axis=0)
    return whole & np.isfinite(signal).any(axis=0) & np.asarray(gauges, dtype=bool)


def event_floor(cumulative: np.ndarray, window_s: float, min_events: float) -> np.ndarray:
    """The smallest meaningful band width per channel: `min_events` per window, as a rate, for counters (whose
    signal is a rate per second); none for gauges, whose floor is relative to their level."""
    return np.where(np.asarray(cumulative, dtype=bool), min_events / window_s, 0.0)
