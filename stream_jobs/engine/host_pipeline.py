"""One host's path through the engine: frames → windows → signals and derived metrics → features by kind →
selected channels → detector ensemble → attribution, with a baseline that is learned, refreshed and restorable."""

from __future__ import annotations

import warnings
import zlib
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from stream_jobs.engine.attribution import Contribution, claim, dominant_subsystem, ranked_contributions
from stream_jobs.engine.channel_watch import (IQR_TO_SIGMA, ChannelBands, ChannelWatch, WatchSettings, WatchVerdict,
                                              counts_things, event_floor)
from stream_jobs.engine.channels import ChannelTable
from stream_jobs.engine.derived import derive, derived_specs, signals, step_seconds
from stream_jobs.engine.detectors import standard_detectors
from stream_jobs.engine.ensemble import DetectorEnsemble
from stream_jobs.engine.features import FeatureLayout, feature_layout
from stream_jobs.engine.selection import Selection, select_channels
from stream_jobs.engine.windows import Window, WindowAssembler

MODES = ("calibrated", "paper")
# The agent's own metrics (its memory, its tick lag) tell of the agent, not of the host's workload.
SELF_METRIC_PREFIX = "agent."
# A rate is taken over a step of at least this share of the sampling interval (see derived.step_seconds)
MIN_STEP_SHARE = 0.5


@dataclass(frozen=True)
class EngineSettings:
    """How windows are cut, baselines learned and windows judged; the same for live, replayed and offline runs."""

    window_s: float = 3.0
    stride_s: float = 1.0
    interval_s: float = 0.1
    warmup_windows: int = 60
    evidence_limit: int = 5
    mode: str = "calibrated"
    risk: float = 1e-4
    min_agreement: int = 1
    seed: int = 0
    selection_threshold: float | None = 0.5
    refit_every: int = 300
    baseline_capacity: int = 32
    baseline_stride: int = 5
    explain_all: bool = False
    baseline_trim: float = 0.0
    watch: WatchSettings = WatchSettings()
    ensemble_alerts: bool = False

    def __post_init__(self):
        if self.warmup_windows < 10:
            raise ValueError(f"warmup_windows is {self.warmup_windows}; at least 10 baseline windows are needed")
        if self.mode not in MODES:
            raise ValueError(f"mode is {self.mode!r}; expected one of {MODES}")
        if self.selection_threshold is not None and not 0 < self.selection_threshold < 1:
            raise ValueError(f"selection_threshold is {self.selection_threshold}; expected between 0 and 1, or None")


@dataclass(frozen=True)
class WindowVerdict:
    """What the engine concluded about one window of one host."""

    window_id: int
    start_ns: int
    end_ns: int
    frames: int
    baseline_ready: bool
    score: float
    threshold: float
    anomalous: bool
    detectors: tuple[str, ...]
    subsystem: str
    claim: str
    evidence: tuple[Contribution, ...]
    detector_scores: dict = field(default_factory=dict)
    detector_thresholds: dict = field(default_factory=dict)
    explanation: str = ""
    baseline_changed: bool = False
    channel_means: np.ndarray | None = field(default=None, compare=False)
    context: "WindowContext | None" = field(default=None, compare=False)
    watch: WatchVerdict | None = field(default=None, compare=False)


@dataclass(frozen=True)
class WindowContext:
    """What the cluster stage needs besides channel means: the window's retransmission context (paper §6)."""

    retransmits: float = 0.0
    segments_out: float = 0.0
    traffic_burstiness: float = 0.0
    irq_z: float = 0.0
    cpu_freq_z: float = 0.0
    gpu_power_z: float = 0.0


class HostPipeline:
    """Windows one host's frames, learns a baseline from its first windows, then judges each new window."""

    def __init__(self, channels: ChannelTable, settings: EngineSettings = EngineSettings(), refit_phase: int = 0):
        self.channels = channels
        self.settings = settings
        self.refit_phase = refit_phase
        self.assembler = WindowAssembler(settings.window_s, settings.stride_s, settings.interval_s)
        self.specs = derived_specs(channels.names)
        self.signal_names = channels.names + tuple(s.name for s in self.specs)
        self.signal_kinds = channels.kinds + ("derived",) * len(self.specs)
        self.subsystem_of = dict(zip(self.signal_names, channels.subsystems + tuple(s.subsystem for s in self.specs)))
        self.full_layout = feature_layout(self.signal_names, self.signal_kinds)
        self.selection: Selection | None = None
        self.layout: FeatureLayout | None = None
        self.kept: np.ndarray | None = None
        self.ensemble: DetectorEnsemble | None = None
        self.windows_seen = 0
        self.learning_since_ns: int | None = None
        self.restored_through_ns: int | None = None
        self._warmup_features: list[np.ndarray] = []
        self._warmup_signals: list[np.ndarray] = []
        self._warmup_means: list[np.ndarray] = []
        self._warmup_signal_rows: list[int] = []
        self.residuals = Residuals.none()
        self._cumulative = np.concatenate([channels.cumulative, np.zeros(len(self.specs), dtype=bool)])
        self._step_ratios = np.concatenate([np.zeros(len(channels), dtype=bool),
                                            np.array([_counts_per_count(spec, channels) for spec in self.specs],
                                                     dtype=bool)])
        self.counted = np.zeros(len(self.signal_names), dtype=bool)
        self.ratio_floors = np.zeros(len(self.signal_names))
        self.signal_levels = np.zeros(len(self.signal_names))
        self.steady = np.zeros(len(self.signal_names), dtype=bool)
        self.watch = ChannelWatch(self._event_floors(), settings.watch)
        self._window_starts: deque = deque(maxlen=settings.watch.adopt_after + 1)
        self._recent = deque(maxlen=settings.baseline_capacity)
        self._retrans = _indices(self.signal_names, ("snmp.Tcp.RetransSegs",))
        self._segments = _indices(self.signal_names, ("snmp.Tcp.OutSegs",))
        self._tx_bytes = _indices(self.signal_names, ("net.tx_bytes.",), prefix=True)

    def _event_floors(self) -> np.ndarray:
        """Each signal's smallest meaningful band width (counters: a few events per window, levels in bytes: the
        watch's byte floor, counters of time busy in the baseline: its core floor (one that never moved, such as CFS
        throttling, stays an event count), gauges that count things: its count floor, shares in percent: its percent
        floor); the agent's own metrics get an infinite one, so they are never judged."""
        floors = event_floor(self._cumulative, self.settings.window_s, self.settings.watch.min_events)
        bytes_per_unit = np.concatenate([self.channels.bytes_per_unit, np.zeros(len(self.specs))])
        with np.errstate(divide="ignore"):
            byte_floor = self.settings.watch.byte_floor / bytes_per_unit
        floors = np.where(bytes_per_unit > 0, np.fmax(floors, byte_floor), floors)
        seconds_per_unit = np.concatenate([self.channels.seconds_per_unit, np.zeros(len(self.specs))])
        busy_time = (seconds_per_unit > 0) & (self.signal_levels > 0)
        with np.errstate(divide="ignore"):
            core_floor = self.settings.watch.core_floor / seconds_per_unit
        floors = np.where(busy_time, np.fmax(floors, core_floor), floors)
        counts = self.counted & (bytes_per_unit == 0)
        floors = np.where(counts, np.fmax(floors, self.settings.watch.count_floor), floors)
        percent = np.concatenate([self.channels.percent, np.zeros(len(self.specs), dtype=bool)])
        floors = np.where(percent, np.fmax(floors, self.settings.watch.percent_floor), floors)
        floors = np.fmax(floors, self.ratio_floors)
        own = np.array([name.startswith(SELF_METRIC_PREFIX) for name in self.signal_names], dtype=bool)
        return np.where(own, np.inf, floors)

    def _watch_floors(self) -> np.ndarray:
        """Floors of the watched columns (see _watched): each takes its signal's, but the spread within a window of a
        counter (or of a ratio of counters) is floored where its minimum events, all arriving in one sample, would
        put it (one instant's handful is not an event); a residual's is at least a share of its pruned signal's
        spread over the baseline, so a fit that was tight does not turn a small change in the ratio of two channels
        into an event. A ratio of two counters is not judged by its spread: per sample it is the quotient of two
        handfuls of counts and leaps whenever a retransmission falls in a sample of few segments, while its mean
        carries any lasting change. Spreads and residuals are also floored at `spread_relative_floor` of their
        signal's baseline
        level, so a near-constant gauge without a unit (a memory total in a table) that stops wobbling or drifts by a
        few kilobytes from its fit is not an event."""
        floors = self._event_floors()
        spreads = np.where(self._cumulative | self._step_ratios, floors * self._one_sample_burst(), floors)
        spreads = np.where(self._step_ratios, np.inf, spreads)
        spreads = np.fmax(spreads, self.settings.watch.spread_relative_floor * np.abs(self.signal_levels))
        residual = np.fmax(floors[self.residuals.dropped], self.settings.watch.residual_floor * self.residuals.spread)
        residual = np.fmax(residual, self.settings.watch.spread_relative_floor * np.abs(self.residuals.level))
        residual_spreads = np.fmax(spreads[self.residuals.dropped], residual)
        return np.concatenate([floors, spreads, residual, residual_spreads])

    def _one_sample_burst(self) -> float:
        """How much larger a counter's spread within a window is than its mean when all of the window's events
        arrive in one sample and none in the others."""
        samples = max(2.0, self.settings.window_s / self.settings.interval_s)
        return self.settings.window_s / self.settings.interval_s * np.sqrt(samples - 1) / samples

    def _secondary_columns(self) -> np.ndarray:
        """True for every watched column but the signals' means."""
        columns = len(self._watch_floors())
        return np.arange(columns) >= len(self.signal_names)

    def _spread_columns(self) -> np.ndarray:
        """True for the watched columns that are spreads within a window (a signal's, or a residual's)."""
        signals, residuals = len(self.signal_names), len(self.residuals)
        index = np.arange(2 * signals + 2 * residuals)
        return ((index >= signals) & (index < 2 * signals)) | (index >= 2 * signals + residuals)

    def signal_departures(self, watched: WatchVerdict) -> np.ndarray:
        """Each signal's departure: the largest of its watched columns'."""
        departures = np.zeros(len(self.signal_names))
        owners = np.array([self.watched_signal(i) for i in range(len(watched.departure))], dtype=np.int64)
        larger = np.abs(watched.departure)
        order = np.argsort(larger, kind="stable")
        departures[owners[order]] = watched.departure[order]
        return departures

    @property
    def baseline_ready(self) -> bool:
        return self.ensemble is not None

    def push(self, timestamp_ns: int, values: np.ndarray) -> list[WindowVerdict]:
        """Add one frame's values (catalog order); returns verdicts for the windows it completes."""
        windows = self.assembler.push(timestamp_ns, np.asarray(values, dtype=np.float64))
        return [self._judge(w) for w in windows if not self._judged_before_restore(w)]

    def needed_since_ns(self) -> int | None:
        """The oldest frame instant this pipeline's state still depends on: the first frame of a baseline being learned,
        else of the first window of the channels' current run of departures, else of the next window. A worker that
        restarts from there rebuilds the same state."""
        window_start = self.assembler.needed_since_ns()
        if self.baseline_ready:
            run = self.watch.longest_run
            if run == 0 or not self._window_starts:
                return window_start
            run_start = self._window_starts[-min(run, len(self._window_starts))]
            return run_start if window_start is None else min(run_start, window_start)
        if self.learning_since_ns is None:
            return window_start
        return self.learning_since_ns if window_start is None else min(self.learning_since_ns, window_start)

    def _judged_before_restore(self, window: Window) -> bool:
        """A window that ended before the restored baseline was saved was judged and stored then."""
        return self.restored_through_ns is not None and window.end_ns <= self.restored_through_ns

    def restart_windows(self) -> None:
        """Start windowing afresh (keeping the baseline), e.g. to judge a recording after learning from another."""
        self.assembler = WindowAssembler(self.settings.window_s, self.settings.stride_s, self.settings.interval_s)

    def restart_baseline(self) -> None:
        """Forget the baseline (a regime change): the next windows are learned as a new one."""
        self.ensemble, self.layout, self.kept, self.selection = None, None, None, None
        self._warmup_features, self._warmup_signals, self._warmup_means = [], [], []
        self._warmup_signal_rows = []
        self.learning_since_ns = None
        self._recent.clear()
        self.residuals = Residuals.none()
        self.watch = ChannelWatch(self._event_floors(), self.settings.watch)

    @property
    def _min_step_s(self) -> float:
        return self.settings.interval_s * MIN_STEP_SHARE

    def _frame_seconds(self, window: Window) -> np.ndarray:
        """The window's frame times in seconds, each step at least the shortest step a rate is taken over (see
        derived.step_seconds), so that counts recovered from rates are the counts that were read."""
        first = window.timestamps_ns[0] / 1e9
        return first + np.concatenate([[0.0], np.cumsum(step_seconds(window.timestamps_ns, self._min_step_s))])

    def _signal(self, window: Window) -> np.ndarray:
        """Per-step signals of every channel and derived metric: (frames − 1, channels + derived)."""
        min_step_s = self._min_step_s
        base = signals(window.timestamps_ns, window.values, self.channels.cumulative, min_step_s)
        if not self.specs:
            return base
        return np.hstack([base, derive(self.specs, window.timestamps_ns, window.values, min_step_s)])

    def _judge(self, window: Window) -> WindowVerdict:
        self.windows_seen += 1
        signal = self._signal(window)
        seconds = self._frame_seconds(window)
        means = _column_means(signal)
        if not self.baseline_ready:
            return self._learn(window, seconds, signal, means)
        features = self.layout.compute(seconds, signal[:, self.kept])
        verdict = self.ensemble.judge(features[None, :])[0]
        watched = self.watch.judge(self._watched(signal, means), lambda: self._inner(signal))
        self._window_starts.append(int(window.timestamps_ns[0]))
        multivariate = self.settings.ensemble_alerts and verdict.flagged
        flagged = watched.flagged or multivariate
        refitted = self._remember(features, flagged)
        z = self.ensemble.detectors[0].z(features[None, :])[0]
        explain = flagged or self.settings.explain_all
        named = self._subsystem(watched) if watched.flagged else ""
        evidence = self._watch_evidence(means, watched) if watched.flagged else ()
        if not evidence and explain:
            evidence = self._evidence(features, z)
        subsystem = named if watched.flagged else \
            (dominant_subsystem(list(evidence), self.subsystem_of) if evidence and flagged else "")
        top = self._lead(evidence, subsystem) if evidence and flagged else None
        detectors = (("channels",) if watched.flagged else ()) + (verdict.flagged_by if multivariate else ())
        return WindowVerdict(
            window.window_id, window.start_ns, window.end_ns, len(window.timestamps_ns), True,
            watched.severity if watched.flagged else verdict.severity, 1.0, flagged, detectors, subsystem,
            claim(top) if top else ("window departs from its baseline" if flagged else ""), evidence,
            {**verdict.scores, "channels": watched.severity}, {**verdict.thresholds, "channels": 1.0},
            top.explanation if top else "", refitted, means, self._context(signal, window, z), watched)

    def _lead(self, evidence: tuple[Contribution, ...], subsystem: str) -> Contribution:
        """The evidence a window's claim tells of: the strongest of the subsystem the window is named after, so that
        the claim and the subsystem agree (the first evidence when none is of it)."""
        return next((e for e in evidence if self.subsystem_of.get(e.channel) == subsystem), evidence[0])

    def _watch_evidence(self, means: np.ndarray, watched: WatchVerdict) -> tuple[Contribution, ...]:
        """The persisted channels, furthest outside their bands first: value, baseline median and spread, z."""
        bands, observed = watched.bands or self.watch.bands, self.watch.last_observed
        magnitude = np.where(watched.persisted, np.abs(watched.departure), -1.0)
        order = np.argsort(-magnitude, kind="stable")[:self.settings.evidence_limit]
        return tuple(Contribution(self.watched_name(i), self.watched_feature(i), float(observed[i]),
                                  float(bands.median[i]), float(bands.sigma[i]), float(watched.z[i]),
                                  self.watched_reference(i)) for i in order if magnitude[i] >= 0)

    def watched_reference(self, index: int) -> str:
        """The representative a residual column is fitted on ('' for a signal's own columns)."""
        signals = len(self.signal_names)
        if index < 2 * signals:
            return ""
        return self.signal_names[self.residuals.representative[(index - 2 * signals) % len(self.residuals)]]

    def _watched(self, signal: np.ndarray, means: np.ndarray) -> np.ndarray:
        """The watched columns of one window: every signal's mean and spread, then every residual's mean and
        spread."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            spreads = np.nanstd(signal, axis=0)
        return np.concatenate([means, spreads, *self.residuals.summary(signal)])

    def _inner(self, signal: np.ndarray) -> np.ndarray | None:
        """The watched columns' confirmations (see ChannelWatch.judge): each column as the median over the window's
        seconds, so one second's burst does not move it; None for a window under three seconds."""
        seconds = round(signal.shape[0] * self.settings.interval_s)
        if seconds < 3:
            return None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmedian(np.stack([self._second(part) for part in np.array_split(signal, seconds)]), axis=0)

    def _second(self, part: np.ndarray) -> np.ndarray:
        """One second's watched columns. Signals that move at every step take its median step and quartile spread,
        so that a burst straddling two seconds moves neither; others (read less often, or sparse) its mean and
        standard deviation."""
        watched = self._watched(part, _column_means(part))
        steady = np.flatnonzero(self.steady)
        if len(steady) and len(part) >= 4:
            signals, rows = len(self.signal_names), len(part)
            ordered = np.sort(part[:, steady], axis=0)  # a NaN sorts last and makes that signal's quartiles NaN
            complete = np.isfinite(ordered[-1])
            median = 0.5 * (ordered[(rows - 1) // 2] + ordered[rows // 2])
            spread = (ordered[(3 * rows) // 4] - ordered[rows // 4]) / IQR_TO_SIGMA
            watched[steady] = np.where(complete, median, np.nan)
            watched[signals + steady] = np.where(complete, spread, np.nan)
        return watched

    def watched_signal(self, index: int) -> int:
        """The signal a watched column belongs to (a residual's pruned signal)."""
        signals = len(self.signal_names)
        if index < 2 * signals:
            return index % signals
        return int(self.residuals.dropped[(index - 2 * signals) % len(self.residuals)])

    def watched_name(self, index: int) -> str:
        return self.signal_names[self.watched_signal(index)]

    def watched_feature(self, index: int) -> str:
        """'mean' or 'std' of the signal, or 'residual' / 'residual-std' of a pruned signal around its fit."""
        signals = len(self.signal_names)
        if index < 2 * signals:
            return "mean" if index < signals else "std"
        return "residual" if index < 2 * signals + len(self.residuals) else "residual-std"

    def _subsystem(self, watched: WatchVerdict) -> str:
        """The subsystem of the persisted channels, each weighing log(1 + its departure), so one channel far out
        counts for more than one just out but not for more than many."""
        weight: dict[str, float] = {}
        for i in np.flatnonzero(watched.persisted):
            subsystem = self.subsystem_of[self.watched_name(i)]
            weight[subsystem] = weight.get(subsystem, 0.0) + float(np.log1p(abs(watched.departure[i])))
        return min(weight.items(), key=lambda item: (-item[1], item[0]))[0] if weight else "unknown"

    def _learn(self, window: Window, seconds: np.ndarray, signal: np.ndarray, means: np.ndarray) -> WindowVerdict:
        if not self._warmup_features:
            self.learning_since_ns = int(window.timestamps_ns[0])
        self._warmup_features.append(self.full_layout.compute(seconds, signal))
        self._warmup_means.append(means)
        if self.windows_seen % max(1, round(self.settings.window_s / self.settings.stride_s)) == 0:
            self._warmup_signals.append(signal)  # non-overlapping windows cover the warm-up once, for selection
            self._warmup_signal_rows.append(len(self._warmup_means) - 1)
        watched = self._watch_while_learning(window, signal, means)
        fitted = len(self._warmup_features) >= self.settings.warmup_windows
        if fitted:
            self._fit_baseline()
        if watched is not None and watched.flagged:
            subsystem = self._subsystem(watched)
            evidence = self._watch_evidence(means, watched)
            top = self._lead(evidence, subsystem)
            return WindowVerdict(window.window_id, window.start_ns, window.end_ns, len(window.timestamps_ns), fitted,
                                 watched.severity, 1.0, True, ("channels",), subsystem,
                                 claim(top), evidence, {"channels": watched.severity}, {"channels": 1.0},
                                 top.explanation, fitted, means, self._context(signal, window, None), watched)
        return WindowVerdict(window.window_id, window.start_ns, window.end_ns, len(window.timestamps_ns), fitted,
                             0.0, 1.0, False, (), "", "", (), baseline_changed=fitted, channel_means=means,
                             context=self._context(signal, window, None), watch=watched)

    def _watch_while_learning(self, window: Window, signal: np.ndarray, means: np.ndarray) -> WatchVerdict | None:
        """Channels that kept their bands through a catalog change are still judged while the rest is learned."""
        if self.watch.bands is None or len(self.watch.event_floor) != 2 * len(self.signal_names):
            return None
        self._window_starts.append(int(window.timestamps_ns[0]))
        return self.watch.judge(self._watched(signal, means), lambda: self._inner(signal))

    def carry_bands_from(self, previous: HostPipeline) -> int:
        """Take over the bands of the channels a previous pipeline of the same host (an older catalog) watched, so a
        catalog change does not blind them while the baseline is learned again; returns how many were carried."""
        if previous.watch.bands is None:
            return 0
        old_columns = {(previous.watched_name(i), previous.watched_feature(i)): i
                       for i in range(len(previous.watch.event_floor))}
        self.watch = ChannelWatch(self._watch_floors(), self.settings.watch, self._secondary_columns(),
                                  self._spread_columns())
        columns = [(self.signal_names[i % len(self.signal_names)], "mean" if i < len(self.signal_names) else "std")
                   for i in range(2 * len(self.signal_names))]
        source = np.array([old_columns.get(column, -1) for column in columns], dtype=np.int64)
        carried = source >= 0
        fields = []
        for name in ("low", "high", "width", "median", "sigma"):
            values = np.full(len(columns), np.nan)
            values[carried] = getattr(previous.watch.bands, name)[source[carried]]
            fields.append(values)
        self.watch.restore(ChannelBands(*fields))
        return int(carried[:len(self.signal_names)].sum())

    def _fit_baseline(self) -> None:
        """Select channels on the warm-up's signals, then fit the detectors on its windows' features."""
        self.selection = self._select(np.vstack(self._warmup_signals)) if self._warmup_signals else None
        self.kept = self.selection.mask(self.signal_names) if self.selection else np.ones(len(self.signal_names), bool)
        self._set_layout()
        baseline = np.vstack(self._warmup_features)[:, self.full_layout.columns_of(self.kept)]
        self.ensemble = self._new_ensemble().fit(baseline)
        if self.settings.baseline_trim > 0:
            baseline = self._trimmed(baseline)
            self.ensemble = self._new_ensemble().fit(baseline)
        self._recent.extend(baseline[::self.settings.baseline_stride].astype(np.float32))
        self._fit_watch()
        self._warmup_features, self._warmup_signals, self._warmup_means = [], [], []
        self.learning_since_ns = None

    def _fit_watch(self) -> None:
        """Bands for every signal's window mean and for every pruned signal's spread around the line its
        representative predicts (residual spreads are known for the warm-up's non-overlapping windows only)."""
        represented = self.selection.represented_by if self.selection else {}
        signals = np.vstack(self._warmup_signals) if self._warmup_signals else np.zeros((0, len(self.signal_names)))
        self.residuals = Residuals.fit(signals, self.signal_names, represented)
        self.counted = counts_things(signals, np.asarray(self.signal_kinds) == "gauge")
        self.ratio_floors = self._ratio_floors(np.vstack(self._warmup_means))
        self.signal_levels = _medians(np.vstack(self._warmup_means))
        self.steady = moves_every_step(signals)
        columns = 2 * len(self.signal_names) + 2 * len(self.residuals)
        baseline = np.full((len(self._warmup_means), columns), np.nan)
        for row, signal in zip(self._warmup_signal_rows, self._warmup_signals):
            baseline[row] = self._watched(signal, self._warmup_means[row])
        baseline[:, :len(self.signal_names)] = np.vstack(self._warmup_means)
        self.watch = ChannelWatch(self._watch_floors(), self.settings.watch, self._secondary_columns(),
                                  self._spread_columns())
        self.watch.fit(baseline, self.settings.baseline_trim)

    def _ratio_floors(self, baseline_means: np.ndarray) -> np.ndarray:
        """Floors of the derived ratios of two counters (retransmits per segment): the numerator's event floor over
        the denominator's median rate in the baseline, so a ratio moved by a handful of events is not an event."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            medians = np.nanmedian(baseline_means, axis=0)
        floors = np.zeros(len(self.signal_names))
        numerator_floors = event_floor(self._cumulative, self.settings.window_s, self.settings.watch.min_events)
        for offset, spec in enumerate(self.specs):
            column = len(self.channels) + offset
            rate = medians[spec.inputs[1]] if self._step_ratios[column] else 0.0
            floors[column] = numerator_floors[spec.inputs[0]] / rate if rate > 0 else 0.0
        return floors

    def _new_ensemble(self) -> DetectorEnsemble:
        return DetectorEnsemble(standard_detectors(self.settings.seed), self.settings.mode,
                                self.settings.min_agreement, self.settings.risk)

    def _trimmed(self, baseline: np.ndarray) -> np.ndarray:
        """The baseline without its most severe `baseline_trim` share of windows: a baseline that may itself hold
        anomalies (a run judged against itself) must not learn them as normal."""
        ranks = self.ensemble.scores(baseline).argsort(axis=0).argsort(axis=0) / max(len(baseline) - 1, 1)
        most_unusual = ranks.max(axis=1)
        return baseline[most_unusual <= np.quantile(most_unusual, 1.0 - self.settings.baseline_trim)]

    def _set_layout(self) -> None:
        """The feature layout of the kept channels, and where the co-occurring effects sit in it."""
        names = tuple(np.asarray(self.signal_names, dtype=object)[self.kept])
        self.layout = feature_layout(names, tuple(np.asarray(self.signal_kinds, dtype=object)[self.kept]))
        self._effect_columns = [self.layout.columns_of([name.startswith(prefixes) for name in names])
                                for prefixes in _EFFECT_PREFIXES]

    def _select(self, baseline_signal: np.ndarray) -> Selection | None:
        if self.settings.selection_threshold is None:
            return None
        subsystems = tuple(self.subsystem_of[n] for n in self.signal_names)
        return select_channels(baseline_signal, self.signal_names, subsystems, self.settings.selection_threshold)

    def _remember(self, features: np.ndarray, flagged: bool) -> bool:
        """Keep unflagged windows for the rolling baseline; refit on them every `refit_every` windows, at the
        host's own phase so that hosts that started together do not all refit in the same second."""
        if not flagged and self.windows_seen % self.settings.baseline_stride == 0:
            self._recent.append(features.astype(np.float32))  # every few windows: a longer span in less memory
        due = (self.windows_seen + self.refit_phase) % self.settings.refit_every == 0
        if due and len(self._recent) >= min(self.settings.warmup_windows, self._recent.maxlen):
            self.ensemble.refit(np.asarray(self._recent, dtype=np.float64))
            self.watch.refit()
            return True
        return False

    def _evidence(self, features: np.ndarray, z: np.ndarray) -> tuple[Contribution, ...]:
        zscore = self.ensemble.detectors[0]
        return tuple(ranked_contributions(z, z, features, zscore.mean, zscore.scale, self.layout.names,
                                          self.settings.evidence_limit))

    def _context(self, signal: np.ndarray, window: Window, z: np.ndarray | None) -> WindowContext:
        """Retransmissions and segments in the window, traffic burstiness, and the co-occurring effects' |z| (none
        while the baseline is learned)."""
        steps = step_seconds(window.timestamps_ns, self._min_step_s)
        counted = lambda columns: float(np.nansum(signal[:, columns] * steps[:, None])) if columns else 0.0
        tx = np.nansum(signal[:, self._tx_bytes], axis=1) if self._tx_bytes else np.zeros(1)
        burstiness = float(np.std(tx) / np.mean(tx)) if np.mean(tx) > 0 else 0.0
        effects = [_largest(z, columns) for columns in self._effect_columns] if z is not None else []
        return WindowContext(counted(self._retrans), counted(self._segments), burstiness, *effects)

    def state(self) -> dict:
        """The learned baseline (selection and fitted detectors) as JSON values, to survive a restart."""
        if not self.baseline_ready:
            raise RuntimeError("HostPipeline.state called before its baseline was learned")
        return {"signal_names": list(self.signal_names), "windows_seen": self.windows_seen,
                "selection": self.selection.to_json() if self.selection else None,
                "ensemble": self.ensemble.state(), "bands": self.watch.bands.to_json(),
                "sustained_bands": self.watch.sustained.to_json() if self.watch.sustained is not None else None,
                "residuals": self.residuals.to_json(), "counted": np.flatnonzero(self.counted).tolist(),
                "ratio_floors": self.ratio_floors.tolist(), "signal_levels": self.signal_levels.tolist(),
                "steady": np.flatnonzero(self.steady).tolist()}

    def restore(self, state: dict) -> bool:
        """Take over a saved baseline if it was learned on the same channels; returns whether it was taken."""
        if tuple(state["signal_names"]) != self.signal_names or "bands" not in state:
            return False
        self.selection = Selection.from_json(state["selection"]) if state["selection"] else None
        self.kept = self.selection.mask(self.signal_names) if self.selection else np.ones(len(self.signal_names), bool)
        self._set_layout()
        self.ensemble = DetectorEnsemble.from_state(state["ensemble"])
        self.residuals = Residuals.from_json(state.get("residuals"))
        self.counted = np.isin(np.arange(len(self.signal_names)), state.get("counted", []))
        self.steady = np.isin(np.arange(len(self.signal_names)), state.get("steady", []))
        self.ratio_floors = np.asarray(state.get("ratio_floors", np.zeros(len(self.signal_names))), dtype=np.float64)
        self.signal_levels = np.asarray(state.get("signal_levels", np.zeros(len(self.signal_names))), np.float64)
        self.watch = ChannelWatch(self._watch_floors(), self.settings.watch, self._secondary_columns(),
                                  self._spread_columns())
        sustained = state.get("sustained_bands")
        self.watch.restore(ChannelBands.from_json(state["bands"]),
                           ChannelBands.from_json(sustained) if sustained else None)
        self.windows_seen = state["windows_seen"]
        self.restored_through_ns = state.get("through_ns")
        return True


@dataclass(frozen=True, eq=False)
class Residuals:
    """Each signal that selection pruned, as its residual from the kept signal that represents it (a least-squares
    line fitted on the baseline): the residual's mean and spread within a window are watched like channels, so a
    pruned signal that shifts on its own stays visible and a correlation that breaks shows as a residual that
    widens. `level` is each pruned signal's baseline mean, which floors its residual (see
    HostPipeline._watch_floors)."""

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
        missing take no part; a representative that never varied gives a flat line at the pruned one's mean)."""
        position = {name: i for i, name in enumerate(names)}
        pairs = [(position[d], position[r]) for d, r in sorted(represented_by.items())
                 if d in position and r in position]
        if not pairs or len(signal) < 3:
            return cls.none()
        dropped, representative = (np.array(column, dtype=np.int64) for column in zip(*pairs))
        y, x = signal[:, dropped], signal[:, representative]
        valid = np.isfinite(x) & np.isfinite(y)
        count = np.fmax(valid.sum(axis=0), 1)
        x_mean = np.where(valid, x, 0).sum(axis=0) / count
        y_mean = np.where(valid, y, 0).sum(axis=0) / count
        covariance = np.where(valid, (x - x_mean) * (y - y_mean), 0).sum(axis=0)
        variance = np.where(valid, (x - x_mean) ** 2, 0).sum(axis=0)
        slope = np.divide(covariance, variance, out=np.zeros_like(covariance), where=variance > 0)
        spread = np.sqrt(np.where(valid, (y - y_mean) ** 2, 0).sum(axis=0) / count)
        return cls(dropped, representative, y_mean - slope * x_mean, slope, spread, y_mean)

    def __len__(self) -> int:
        return len(self.dropped)

    def summary(self, signal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each residual's mean and standard deviation over the window's steps."""
        if not len(self):
            return np.zeros(0), np.zeros(0)
        residual = signal[:, self.dropped] - (self.intercept + self.slope * signal[:, self.representative])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmean(residual, axis=0), np.nanstd(residual, axis=0)

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


def _medians(means: np.ndarray) -> np.ndarray:
    """Each column's median, 0 where it was never read."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nan_to_num(np.nanmedian(means, axis=0))


_EFFECT_PREFIXES = (("irq.", "softirq."), ("cpu.busy_mhz.", "cpu.freq_mhz."), ("gpu.power.",))


def _counts_per_count(spec, channels: ChannelTable) -> bool:
    """Whether a derived channel is the per-step ratio of two counters."""
    return spec.formula == "delta_ratio" and all(channels.cumulative[i] for i in spec.inputs[:2])


def refit_phase(host: str, refit_every: int) -> int:
    """A host's offset in the refit cycle, the same in every process and run (replays refit where live did).

    >>> refit_phase("gpu-node-17", 300) == refit_phase("gpu-node-17", 300) < 300
    True
    """
    return zlib.crc32(host.encode("utf-8")) % refit_every


def _largest(z: np.ndarray, columns: np.ndarray) -> float:
    """The largest |z| among the columns (0 when there are none or none is finite)."""
    picked = np.abs(z[columns])
    return float(np.nanmax(picked)) if np.isfinite(picked).any() else 0.0


def _indices(names: tuple[str, ...], wanted: tuple[str, ...], prefix: bool = False) -> list[int]:
    return [i for i, name in enumerate(names) if (name.startswith(wanted) if prefix else name in wanted)]


def moves_every_step(signals: np.ndarray, share: float = 0.9) -> np.ndarray:
    """Signals nonzero in at least `share` of the baseline's steps (read at every tick and always moving); a signal
    read less often, or a sparse counter, is zero at most steps, and its median step says nothing."""
    if signals.shape[0] == 0:
        return np.zeros(signals.shape[1], dtype=bool)
    return (np.isfinite(signals) & (signals != 0)).mean(axis=0) >= share


def _column_means(signal: np.ndarray) -> np.ndarray:
    """Each channel's mean over the window (NaN for a channel never read)."""
    counts = np.isfinite(signal).sum(axis=0)
    totals = np.where(np.isfinite(signal), signal, 0.0).sum(axis=0)
    return np.divide(totals, counts, out=np.full(signal.shape[1], np.nan), where=counts > 0)
