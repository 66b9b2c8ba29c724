"""Window features per channel, by channel kind (paper §4.2).

Dynamic signals (gauges, counter rates, derived metrics) get moments, linear trend, lag-1 autocorrelation and a
stationarity statistic; event counters get their total, burst count and largest step; static channels get none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

try:
    from stream_jobs.engine import _window_features
except ImportError:  # built by `pip install`; without it numpy computes every window, only slower
    _window_features = None

DYNAMIC_FEATURES = ("mean", "std", "min", "max", "skew", "kurtosis", "slope", "acf1", "stationarity")
EVENT_FEATURES = ("sum", "bursts", "max")
DYNAMIC_KINDS = ("gauge", "counter", "derived")
EVENT_KINDS = ("event",)
STATIC_KINDS = ("static",)
_MIN_SAMPLES_FOR_SHAPE = 3


def dynamic_features(seconds: np.ndarray, signal: np.ndarray) -> np.ndarray:
    """DYNAMIC_FEATURES of each channel over one window: (n, c) samples at `seconds` → (c, 9).

    Non-finite samples are ignored. Skew and kurtosis are the biased Fisher moments; a constant channel has 0 skew,
    0 excess kurtosis, 0 acf1 and 0 stationarity; fewer than 3 samples give NaN for those four. A window of finite
    samples is computed by the compiled kernel where it was built (a tenth of the time), any other by numpy.
    """
    signal = np.asarray(signal, dtype=np.float64)
    if _window_features is not None and signal.ndim == 2 and len(signal) >= _MIN_SAMPLES_FOR_SHAPE:
        t_centred = np.asarray(seconds, dtype=np.float64) - np.mean(seconds)
        features = np.empty((signal.shape[1], len(DYNAMIC_FEATURES)))
        if _window_features.dynamic_features(signal, t_centred, float((t_centred ** 2).sum()), features):
            return features
    return dynamic_features_in_numpy(seconds, signal)


def dynamic_features_in_numpy(seconds: np.ndarray, signal: np.ndarray) -> np.ndarray:
    """`dynamic_features` in numpy alone: any window, missing samples included."""
    # in row order: columns picked out of a window (signal[:, kept]) come laid out by column, and numpy reduces
    # such an array down its columns one column at a time, which cost the whole function half as much again
    signal = np.ascontiguousarray(signal, dtype=np.float64)
    with np.errstate(all="ignore"):  # NaN marks what a window cannot tell; numpy need not say so too
        present, counts = _presence(signal)
        if len(signal) and present.all():
            present = None  # the usual window: every sample finite, so nothing needs masking
        low, high = _extremes(signal, present, counts)
        scale = _magnitude(low, high)  # moments of signal/scale cannot overflow, whatever the units
        scaled = signal / scale
        mean = _mean(scaled, present, counts)
        centred = _masked(scaled - mean, present, 0.0)
        squared = centred * centred  # products, not `**`: numpy's float power is ~300× slower for cubes
        variance = _per_sample(squared, counts)
        slope = _slope(np.asarray(seconds, dtype=np.float64), centred, present) * scale
        shape = _shape(scaled, centred, squared, present, counts, variance, low == high)
    return np.column_stack([mean * scale, np.sqrt(variance) * scale, low, high, shape[:, :2],
                            np.where(np.isfinite(slope), slope, np.nan), shape[:, 2:]])


def event_features(increments: np.ndarray) -> np.ndarray:
    """EVENT_FEATURES of each event counter: (n, c) per-step increments → (c, 3); NaN steps are skipped over.

    A burst is a maximal run of steps with a positive increment; a NaN step neither ends nor starts one. Computed by
    the compiled kernel where it was built, else by numpy.
    """
    increments = np.asarray(increments, dtype=np.float64)
    if _window_features is not None and increments.ndim == 2:
        features = np.empty((increments.shape[1], len(EVENT_FEATURES)))
        _window_features.event_features(increments, features)
        return features
    return event_features_in_numpy(increments)


def event_features_in_numpy(increments: np.ndarray) -> np.ndarray:
    """`event_features` in numpy alone; in row order, as `dynamic_features`, so that totals are summed down each
    column in order however the window was cut."""
    increments = np.ascontiguousarray(increments, dtype=np.float64)
    present, counts = _presence(increments)
    with np.errstate(over="ignore"):  # a total beyond float range is inf, which is what it is
        total = np.where(present, increments, 0.0).sum(axis=0)
    _, largest = _extremes(increments, present, counts)
    features = np.column_stack([total, _bursts(increments, present), largest])
    features[counts == 0] = np.nan
    return features


@dataclass(frozen=True)
class FeatureLayout:
    """Which channels get which features, and the order of the flattened vector: dynamic block, then events."""

    channel_names: tuple[str, ...]
    dynamic_channels: tuple[int, ...]
    event_channels: tuple[int, ...]

    @property
    def names(self) -> "FeatureNames":
        """'channel:feature' for every entry of `compute`'s output, made when read: a host's selected layout has
        thousands of features, and held as strings they cost ~350 KB per host."""
        return FeatureNames(self)

    def name(self, index: int) -> str:
        """The name of one entry of `compute`'s output (0 ≤ index < len(self))."""
        return ":".join(self.name_parts(index))

    def name_parts(self, index: int) -> tuple[str, str]:
        """The channel and the feature of one entry of `compute`'s output (0 ≤ index < len(self))."""
        dynamic = len(self.dynamic_channels) * len(DYNAMIC_FEATURES)
        if index < dynamic:
            channel, feature = divmod(index, len(DYNAMIC_FEATURES))
            return self.channel_names[self.dynamic_channels[channel]], DYNAMIC_FEATURES[feature]
        channel, feature = divmod(index - dynamic, len(EVENT_FEATURES))
        return self.channel_names[self.event_channels[channel]], EVENT_FEATURES[feature]

    @cached_property
    def channel_of_feature(self) -> np.ndarray:
        """Catalog index of the channel behind every entry of `compute`'s output (int32: one per feature, per host)."""
        return np.concatenate([np.repeat(self._dynamic_index, len(DYNAMIC_FEATURES)),
                               np.repeat(self._event_index, len(EVENT_FEATURES))]).astype(np.int32)

    def columns_of(self, channels: np.ndarray) -> np.ndarray:
        """Positions in `compute`'s output of the features of the channels marked in `channels` (a boolean mask
        over `channel_names`), in output order."""
        return np.flatnonzero(np.asarray(channels, dtype=bool)[self.channel_of_feature])

    @cached_property
    def _dynamic_index(self) -> np.ndarray:
        return np.asarray(self.dynamic_channels, dtype=np.intp)

    @cached_property
    def _event_index(self) -> np.ndarray:
        return np.asarray(self.event_channels, dtype=np.intp)

    def __len__(self) -> int:
        return len(self.dynamic_channels) * len(DYNAMIC_FEATURES) + len(self.event_channels) * len(EVENT_FEATURES)

    def compute(self, seconds: np.ndarray, signal: np.ndarray) -> np.ndarray:
        """Flattened features (F,) of one window: `seconds` are the n frame times, `signal` the (n-1, c) steps.

        `signal` is what `derived.signals` returns (rates per second for counters and events), all channels in
        catalog order; event rates are turned back into per-step counts with each step's duration.
        """
        seconds = np.asarray(seconds, dtype=np.float64)
        if len(seconds) != len(signal) + 1:
            raise ValueError(f"{len(seconds)} frame times for {len(signal)} steps; expected one more time than steps")
        dynamic = dynamic_features(seconds[1:], signal[:, self._dynamic_index])
        events = event_features(signal[:, self._event_index] * np.diff(seconds)[:, None])
        return np.concatenate([dynamic.ravel(), events.ravel()])


class FeatureNames(Sequence):
    """The feature names of a layout as a read-only sequence, each made when it is read."""

    def __init__(self, layout: FeatureLayout):
        self.layout = layout

    def __len__(self) -> int:
        return len(self.layout)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self.layout.name(i) for i in range(*index.indices(len(self)))]
        if not -len(self) <= index < len(self):
            raise IndexError(f"feature {index} of {len(self)}")
        return self.layout.name(index % len(self))

    def __iter__(self):
        names = self.layout.channel_names
        for blocks, features in ((self.layout.dynamic_channels, DYNAMIC_FEATURES),
                                 (self.layout.event_channels, EVENT_FEATURES)):
            for channel in blocks:
                prefix = names[channel] + ":"
                yield from (prefix + feature for feature in features)


@lru_cache(maxsize=256)
def feature_layout(names: tuple[str, ...], kinds: tuple[str, ...]) -> FeatureLayout:
    """The layout for the given channel kinds: gauge, counter, derived → dynamic; event → event; static → none.

    Layouts are immutable and cached, so hosts with the same catalog share one (and its thousands of feature names).
    """
    if len(names) != len(kinds):
        raise ValueError(f"{len(names)} names but {len(kinds)} kinds; expected one kind per channel")
    unknown = sorted(set(kinds) - set(DYNAMIC_KINDS + EVENT_KINDS + STATIC_KINDS))
    if unknown:
        raise ValueError(f"unknown channel kinds {unknown}; expected {DYNAMIC_KINDS + EVENT_KINDS + STATIC_KINDS}")
    dynamic = tuple(i for i, kind in enumerate(kinds) if kind in DYNAMIC_KINDS)
    events = tuple(i for i, kind in enumerate(kinds) if kind in EVENT_KINDS)
    return FeatureLayout(tuple(names), dynamic, events)


def _presence(signal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where samples are finite, and how many each channel has."""
    present = np.isfinite(signal)
    return present, present.sum(axis=0)


def _masked(values: np.ndarray, present: np.ndarray | None, fill: float) -> np.ndarray:
    """values where samples are present, `fill` elsewhere; values themselves when every sample is (None)."""
    return values if present is None else np.where(present, values, fill)


def _counts(present: np.ndarray | None, shape: tuple[int, int]) -> np.ndarray:
    """Samples per channel, given where they are present (None: all of them)."""
    return np.full(shape[1], shape[0]) if present is None else present.sum(axis=0)


def _per_sample(total: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Column sums divided by sample counts; NaN for channels without samples."""
    return np.divide(total.sum(axis=0), counts, out=np.full(total.shape[1:], np.nan), where=counts > 0)


def _magnitude(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The largest |sample| per channel, or 1 where that is 0 or unknown."""
    magnitude = np.maximum(np.abs(low), np.abs(high))
    return np.where((magnitude > 0) & np.isfinite(magnitude), magnitude, 1.0)


def _mean(signal: np.ndarray, present: np.ndarray | None, counts: np.ndarray) -> np.ndarray:
    return _per_sample(_masked(signal, present, 0.0), counts)


def _extremes(signal: np.ndarray, present: np.ndarray | None, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel minimum and maximum of the finite samples; NaN for channels without samples."""
    low = _masked(signal, present, np.inf).min(axis=0, initial=np.inf)
    high = _masked(signal, present, -np.inf).max(axis=0, initial=-np.inf)
    empty = counts == 0
    return np.where(empty, np.nan, low), np.where(empty, np.nan, high)


def _shape(scaled, centred, squared, present, counts, variance, flat) -> np.ndarray:
    """Skew, excess kurtosis, acf1 and stationarity per channel (c, 4); NaN below three samples."""
    spread = np.sqrt(variance)
    energy = squared.sum(axis=0)
    # σ³ as a product: numpy's float power is its own code on CPUs with AVX-512 and libm's elsewhere, which round
    # differently, and a window must be judged the same on every host and by the compiled kernel
    shape = np.column_stack([_standardised_moment(_column_dot(squared, centred), variance * spread, counts, flat),
                             _standardised_moment(_column_dot(squared, squared), variance * variance, counts, flat,
                                                  excess=3.0),
                             _acf1(centred, energy, present, flat), _stationarity(scaled, present, spread, flat)])
    shape[counts < _MIN_SAMPLES_FOR_SHAPE] = np.nan
    return shape


def _column_dot(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Σ_t left[t]·right[t] per channel, without the (n, c) product as a temporary: half the time of
    (left * right).sum(axis=0), equal to it up to the order of the additions."""
    return np.einsum("ij,ij->j", left, right)


def _standardised_moment(powered_sum: np.ndarray, spread_powered: np.ndarray, counts: np.ndarray, flat: np.ndarray,
                         excess: float = 0.0) -> np.ndarray:
    """E[(x-μ)^k] / σ^k − excess per channel from Σ(x-μ)^k (scipy.stats' biased Fisher moments); 0 for a flat
    channel."""
    moment = np.divide(powered_sum, counts, out=np.full(powered_sum.shape, np.nan), where=counts > 0)
    return np.divide(moment, spread_powered, out=np.full_like(moment, excess),
                     where=~flat & (spread_powered > 0)) - excess


def _slope(seconds: np.ndarray, centred: np.ndarray, present: np.ndarray | None) -> np.ndarray:
    """Least-squares slope per channel (units per second) of the samples `centred` on their mean (0 where absent),
    over the `present` ones (None: all)."""
    if present is None:  # one time axis for every channel
        t_centred = seconds - seconds.mean()
        denominator = float((t_centred ** 2).sum())
        if denominator <= 0:
            return np.full(centred.shape[1], np.nan)
        return np.einsum("i,ij->j", t_centred, centred) / denominator
    counts = present.sum(axis=0)
    t = np.where(present, seconds[:, None], 0.0)
    t_mean = np.divide(t.sum(axis=0), counts, out=np.zeros(centred.shape[1]), where=counts > 0)
    t_centred = np.where(present, seconds[:, None] - t_mean, 0.0)
    denominator = (t_centred ** 2).sum(axis=0)
    return np.divide(_column_dot(t_centred, centred), denominator, out=np.full(centred.shape[1], np.nan),
                     where=denominator > 0)


def _acf1(centred: np.ndarray, energy: np.ndarray, present: np.ndarray | None, flat: np.ndarray) -> np.ndarray:
    """Lag-1 autocorrelation Σ c_t·c_{t+1} / Σ c_t² (`energy`) over consecutive finite pairs; NaN without any pair."""
    lagged = _column_dot(centred[:-1], centred[1:])
    has_pair = len(centred) > 1 if present is None else (present[:-1] & present[1:]).any(axis=0)
    acf = np.divide(lagged, energy, out=np.zeros_like(lagged), where=~flat & (energy > 0))
    return np.where(has_pair, acf, np.nan)


def _stationarity(signal: np.ndarray, present: np.ndarray | None, spread: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """|mean of first half − mean of second half| / standard deviation of the pooled window.

    A unit-root (ADF) or KPSS test per channel and window would cost a regression and a lag search for each of
    hundreds of channels every second, and its p-values mean little on 30 samples. This statistic is one pass and
    bounded: at most 1/√(p·q) for halves holding shares p and q of the samples, so 2 for equal halves (a pure step).
    """
    half = len(signal) // 2
    first_present, second_present = (None, None) if present is None else (present[:half], present[half:])
    first = _mean(signal[:half], first_present, _counts(first_present, signal[:half].shape))
    second = _mean(signal[half:], second_present, _counts(second_present, signal[half:].shape))
    gap = np.abs(first - second)
    ratio = np.divide(gap, spread, out=np.zeros_like(gap), where=~flat & (spread > 0))
    return np.where(np.isnan(gap), np.nan, ratio)


def _bursts(increments: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Number of maximal runs of positive increments per channel, NaN steps skipped."""
    positive = present & (increments > 0)
    steps = np.arange(len(increments))[:, None]
    last_present = np.maximum.accumulate(np.where(present, steps, -1), axis=0)
    previous = np.concatenate([np.full((1, increments.shape[1]), -1), last_present])[:-1]
    previous_positive = np.take_along_axis(positive, np.maximum(previous, 0), axis=0) & (previous >= 0)
    return (positive & ~previous_positive).sum(axis=0).astype(np.float64)
