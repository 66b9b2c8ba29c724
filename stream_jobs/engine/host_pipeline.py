"""One host's path through the engine: frames → windows → signals and derived metrics → features by kind →
selected channels → detector ensemble → attribution, with a baseline that is learned, refreshed and restorable."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import replace

import numpy as np

from schemas.channels import NET_TX_BYTES_PREFIX, TCP_OUT_SEGMENTS, TCP_RETRANSMITS
from stream_jobs.engine.attribution import Contribution, claim, strongest_contributions
from stream_jobs.engine.baseline_fit import baseline_misfit
from stream_jobs.engine.calibration import SECONDS_PER_DAY, Calibration
from stream_jobs.engine.channel_watch import ChannelBands, ChannelWatch, WatchTiming, WatchVerdict
from stream_jobs.engine.channels import ChannelTable
from stream_jobs.engine.decide.window import CHANNELS, evidence_lead, window_finding
from stream_jobs.engine.derived import derived_specs
from stream_jobs.engine.detectors import paper_detectors, standard_detectors
from stream_jobs.engine.ensemble import DetectorEnsemble, EnsembleVerdict
from stream_jobs.engine.features import FeatureLayout, feature_layout
from stream_jobs.engine.half_precision import Float16Rows
from stream_jobs.engine.learning_doubt import StretchApart, stretch_apart
from stream_jobs.engine.measured_window import MeasuredWindow, WindowMeasure
from stream_jobs.engine.own_footprint import OwnFootprint
from stream_jobs.engine.selection import Selection, select_channels
from stream_jobs.engine.settings import EngineSettings
from stream_jobs.engine.verdicts import WindowContext, WindowVerdict, window_context
from stream_jobs.engine.watched_columns import WatchedColumns
from stream_jobs.engine.windows import Window, WindowAssembler

# The trio judges at most this many frame cells' worth of windows together (see HostPipeline.push_frames)
CELLS_SCORED_TOGETHER = 1 << 20


class HostPipeline:
    """Windows one host's frames, learns a baseline from its first windows, then judges each new window."""

    def __init__(self, channels: ChannelTable, settings: EngineSettings = EngineSettings(), refit_phase: int = 0):
        self.channels = channels
        self.settings = settings
        self.refit_phase = refit_phase
        self.assembler = WindowAssembler(settings.window_s, settings.stride_s, settings.interval_s)
        self.specs = derived_specs(channels.names)
        self.columns = WatchedColumns(channels, self.specs, settings)
        self.signal_names, self.signal_kinds = self.columns.signal_names, self.columns.signal_kinds
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
        self.watch = self._new_watch(self.columns.event_floors())
        self._window_starts: deque = deque(maxlen=WatchTiming.of(settings.watch, settings.stride_s,
                                                                   settings.window_s).adopt_after + 1)
        self._recent = Float16Rows(settings.baseline_capacity)  # the rolling baseline
        self._retrans = _indices(self.signal_names, (TCP_RETRANSMITS,))
        self._segments = _indices(self.signal_names, (TCP_OUT_SEGMENTS,))
        self._tx_bytes = _indices(self.signal_names, (NET_TX_BYTES_PREFIX,), prefix=True)
        self.measure = WindowMeasure(channels.cumulative, self.specs, OwnFootprint(channels), settings.interval_s)
        self.doubt: StretchApart | None = None  # what the last baseline learned may hold of an anomaly
        self._effect_columns: list[np.ndarray] = []
        self._trio_streak = 0  # windows in a row the trio has flagged
        self._state_through_ns: int | None = None  # the window through which `state()` last changed for good

    @property
    def baseline_ready(self) -> bool:
        return self.ensemble is not None

    def push(self, timestamp_ns: int, values: np.ndarray) -> list[WindowVerdict]:
        """Add one frame's values (catalog order); returns verdicts for the windows it completes."""
        windows = self.assembler.push(timestamp_ns, np.asarray(values, dtype=np.float64))
        return [self._judge(w) for w in windows if not self._judged_before_restore(w)]

    def push_frames(self, timestamps_ns: np.ndarray, values: np.ndarray) -> list[WindowVerdict]:
        """Add many frames (a recording, rows in catalog order): the verdicts `push` gives frame by frame, with the
        trio's scores of the windows judged against one fit computed together."""
        windows = [window for timestamp, row in zip(np.asarray(timestamps_ns).tolist(), values)
                   for window in self.assembler.push(timestamp, np.asarray(row, dtype=np.float64))
                   if not self._judged_before_restore(window)]
        verdicts, ahead = [], {}
        for index, window in enumerate(windows):
            if index not in ahead and self.baseline_ready and not self._trio_refits:
                together = max(1, CELLS_SCORED_TOGETHER // max(window.values.size, 1))
                ahead = dict(enumerate(self._scored(list(map(self.measure, windows[index:index + together]))), index))
            verdicts.append(self._judge(window, ahead.pop(index, None)))
        return verdicts

    @property
    def _trio_refits(self) -> bool:
        """Whether the trio learns again on the rolling baseline (calibrated, thresholds not following its scores)."""
        return self.settings.mode == "calibrated" and not self.settings.trailing_s

    def _scored(self, measured: list[MeasuredWindow]) -> list[MeasuredWindow]:
        """The windows with the trio's features, their z and its verdicts, judged in order against its current fit."""
        features = np.vstack([self.layout.compute(m.seconds, m.signal[:, self.kept]) for m in measured])
        zscore = self.ensemble.detectors[0]
        z = zscore.z(features)  # attribution's too: computed once
        verdicts = self.ensemble.judge(features, {zscore.name: zscore.score_of_z(z)})
        return [m.judged_by_trio(f, row, verdict) for m, f, row, verdict in zip(measured, features, z, verdicts)]

    def needed_since_ns(self) -> int | None:
        """The oldest frame instant this pipeline's state still depends on: the first frame of a baseline being learned,
        else of the first window of the channels' current run of departures, else of the next window (or, where the
        trio's thresholds follow its scores, of the first window after the last saved state: every score since
        counts). A worker that restarts from there rebuilds the same state."""
        window_start = self.assembler.needed_since_ns()
        if self.baseline_ready and self.ensemble.trailing and self._state_through_ns is not None:
            since_saved = self._first_frame_after(self._state_through_ns)
            window_start = since_saved if window_start is None else min(window_start, since_saved)
        if self.baseline_ready:
            run = self.watch.longest_run
            if run == 0 or not self._window_starts:
                return window_start
            run_start = self._window_starts[-min(run, len(self._window_starts))]
            return run_start if window_start is None else min(run_start, window_start)
        if self.learning_since_ns is None:
            return window_start
        return self.learning_since_ns if window_start is None else min(self.learning_since_ns, window_start)

    def _first_frame_after(self, window_end_ns: int) -> int:
        """The first frame the window after the one that ends at `window_end_ns` needs: the frame before its start
        too, which its first step is measured from."""
        settings = self.settings
        return window_end_ns + round((settings.stride_s - settings.window_s - settings.interval_s) * 1e9)

    def _judged_before_restore(self, window: Window) -> bool:
        """A window that ended before the restored baseline was saved was judged and stored then."""
        return self.restored_through_ns is not None and window.end_ns <= self.restored_through_ns

    def restart_windows(self) -> None:
        """Start windowing afresh (keeping the baseline), e.g. to judge a recording after learning from another."""
        self.assembler = WindowAssembler(self.settings.window_s, self.settings.stride_s, self.settings.interval_s)

    def restart_baseline(self) -> None:
        """Forget the baseline (a regime change): the next windows are learned as a new one."""
        self.ensemble, self.layout, self.kept, self.selection = None, None, None, None
        self._warmup_features, self._warmup_signals, self._warmup_means, self._warmup_signal_rows = [], [], [], []
        self.learning_since_ns = None
        self._recent.clear()
        self.columns.forget()
        self.watch = self._new_watch(self.columns.event_floors())

    def _new_watch(self, floors: np.ndarray, secondary: np.ndarray | None = None,
                   rising_only: np.ndarray | None = None, guards: np.ndarray | None = None) -> ChannelWatch:
        """A channel watch calibrated to this pipeline's promise, stride and window."""
        calibration = Calibration(self.settings.watch_risk, self.settings.stride_s, self.settings.window_s)
        return ChannelWatch(floors, self.settings.watch, secondary, rising_only, calibration, guards)

    def _learned_watch(self) -> ChannelWatch:
        """A channel watch of every watched column, with the floors of what the baseline taught."""
        columns = self.columns
        return self._new_watch(columns.watch_floors(), columns.secondary_columns(), columns.spread_columns(),
                               columns.residual_guards())

    def _judge(self, window: Window, measured: MeasuredWindow | None = None) -> WindowVerdict:
        measured = measured or self.measure(window)
        if (verdict := self._judged(measured)).baseline_changed:
            self._state_through_ns = verdict.end_ns  # what `state()` now holds, saved with this window
        return verdict

    def _judged(self, measured: MeasuredWindow) -> WindowVerdict:
        """The window's verdict; while no baseline is ready, the window is learned as part of it."""
        self.windows_seen += 1
        window, signal, means = measured.window, measured.signal, measured.means
        if not self.baseline_ready:
            return self._learn(measured)
        if measured.trio is None:
            measured = self._scored([measured])[0]
        features, z = measured.features, measured.z
        watched = self.watch.judge(self.columns.of_window(signal, means), lambda: self.columns.confirmations(signal))
        verdict = self._held(measured.trio, z)
        self._window_starts.append(int(window.timestamps_ns[0]))
        found = window_finding(watched, verdict, self.settings.mode == "paper", self.settings.ensemble_alerts,
                               self.settings.explain_all, lambda: self._watch_evidence(means, watched),
                               lambda: self._evidence(features, z), self.subsystem_of)
        watched = watched if CHANNELS in found.detectors else watched.silenced()
        refitted = self._remember(features, found.flagged)
        return WindowVerdict(
            window.window_id, window.start_ns, window.end_ns, len(window.timestamps_ns), True, found.severity, 1.0,
            found.flagged, found.detectors, found.subsystem,
            claim(found.lead) if found.lead else ("window departs from its baseline" if found.flagged else ""),
            found.evidence, {**verdict.scores, "channels": watched.severity}, {**verdict.thresholds, "channels": 1.0},
            found.lead.explanation if found.lead else "", refitted, means, self._context(measured, z),
            watched, self.columns.ranked(watched, self._feature_evidence(z, features)) if found.flagged else (),
            measured.worked)

    def _held(self, verdict: EnsembleVerdict, z: np.ndarray) -> EnsembleVerdict:
        """The trio's verdict, flagged once the trio has flagged for as long as a channel's streak needs no
        confirmation (bursts a few seconds apart lie in every window that holds them), and only while the channel
        its evidence points at first shows the change itself. The paper's mode flags as §4.3 does."""
        if self.settings.mode == "paper":
            return verdict
        self._trio_streak = self._trio_streak + 1 if verdict.flagged else 0
        if self._trio_streak >= self.watch.timing.unconfirmed and self._lead_shows_it(z):
            return verdict
        return replace(verdict, flagged=False) if verdict.flagged else verdict

    def _lead_shows_it(self, z: np.ndarray) -> bool:
        """Whether the signal with the largest feature |z| shows the change in its window mean or its spread (see
        ChannelBands.shows)."""
        lead = int(np.argmax(self._feature_evidence(z)))
        columns = np.array([lead, len(self.signal_names) + lead])
        return self.watch.bands.shows(self.watch.last_observed, columns, self.watch.rising_only)

    def _watch_evidence(self, means: np.ndarray, watched: WatchVerdict) -> tuple[Contribution, ...]:
        """The persisted channels, furthest outside their bands first: value, baseline median and spread, z."""
        bands, observed = watched.bands or self.watch.bands, self.watch.last_observed
        magnitude = np.where(watched.persisted, np.abs(watched.departure), -1.0)
        order = np.argsort(-magnitude, kind="stable")[:self.settings.evidence_limit]
        columns = self.columns
        return tuple(Contribution(columns.name(i), columns.feature(i), float(observed[i]), float(bands.median[i]),
                                  float(bands.sigma[i]), float(watched.z[i]), columns.reference(i))
                     for i in order if magnitude[i] >= 0)

    def _learn(self, measured: MeasuredWindow) -> WindowVerdict:
        window, signal, means = measured.window, measured.signal, measured.means
        self._keep_for_baseline(window, measured.seconds, signal, means)
        watched = self._watch_while_learning(window, signal, means)
        fitted = len(self._warmup_features) >= self.settings.warmup_windows
        if fitted:
            learned = np.vstack(self._warmup_means)
            self._fit_baseline()
            self.doubt = stretch_apart(learned, self.columns.event_floors(), self.signal_names,
                                       self.watch.timing.unconfirmed)
        if watched is not None and watched.flagged:
            evidence = self._watch_evidence(means, watched)
            top = evidence_lead(evidence, self.subsystem_of)
            return WindowVerdict(window.window_id, window.start_ns, window.end_ns, len(window.timestamps_ns), False,
                                 watched.severity, 1.0, True, (CHANNELS,), self.subsystem_of[top.channel],
                                 claim(top), evidence, {"channels": watched.severity}, {"channels": 1.0},
                                 top.explanation, fitted, means, self._context(measured, None), watched, (),
                                 measured.worked)
        return WindowVerdict(window.window_id, window.start_ns, window.end_ns, len(window.timestamps_ns), False,
                             0.0, 1.0, False, (), "", "", (), baseline_changed=fitted, channel_means=means,
                             context=self._context(measured, None), watch=watched, own_activity=measured.worked)

    def _keep_for_baseline(self, window: Window, seconds: np.ndarray, signal: np.ndarray, means: np.ndarray) -> None:
        if not self._warmup_features:
            self.learning_since_ns = int(window.timestamps_ns[0])
        self._warmup_features.append(self.full_layout.compute(seconds, signal))
        self._warmup_means.append(means)
        if self.windows_seen % max(1, round(self.settings.window_s / self.settings.stride_s)) == 0:
            self._warmup_signals.append(signal)  # non-overlapping windows cover the warm-up once, for selection
            self._warmup_signal_rows.append(len(self._warmup_means) - 1)

    def _watch_while_learning(self, window: Window, signal: np.ndarray, means: np.ndarray) -> WatchVerdict | None:
        """Channels that kept their bands through a catalog change are still judged while the rest is learned."""
        if self.watch.bands is None or len(self.watch.event_floor) != 2 * len(self.signal_names):
            return None
        self._window_starts.append(int(window.timestamps_ns[0]))
        return self.watch.judge(self.columns.of_window(signal, means), lambda: self.columns.confirmations(signal))

    def carry_bands_from(self, previous: HostPipeline) -> int:
        """Take over the bands of the channels a previous pipeline of the same host (an older catalog) watched, so a
        catalog change does not blind them while the baseline is learned again; returns how many were carried."""
        if previous.watch.bands is None:
            return 0
        old_columns = {(previous.columns.name(i), previous.columns.feature(i)): i
                       for i in range(len(previous.watch.event_floor))}
        self.watch = self._learned_watch()
        columns = [(self.signal_names[i % len(self.signal_names)], "mean" if i < len(self.signal_names) else "std")
                   for i in range(2 * len(self.signal_names))]
        source = np.array([old_columns.get(column, -1) for column in columns], dtype=np.int64)
        self.watch.restore(previous.watch.bands.carried(source, self.watch.event_floor[:len(columns)]))
        return int((source[:len(self.signal_names)] >= 0).sum())

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
        self._recent.restart(baseline[::self.settings.baseline_stride])
        self._fit_watch()
        self._warmup_features, self._warmup_signals, self._warmup_means = [], [], []
        self.learning_since_ns = None

    def _fit_watch(self) -> None:
        """Bands for every signal's window mean and for every pruned signal's spread around the line its
        representative predicts (residual spreads are known for the warm-up's non-overlapping windows only)."""
        represented = self.selection.represented_by if self.selection else {}
        signals = np.vstack(self._warmup_signals) if self._warmup_signals else np.zeros((0, len(self.signal_names)))
        window_means = np.vstack(self._warmup_means)
        self.columns.learn(signals, window_means, represented)
        baseline = self.columns.baseline(window_means, self._warmup_signals, self._warmup_signal_rows)
        self.watch = self._learned_watch()
        self.watch.fit(baseline, self.settings.baseline_trim)

    def _new_ensemble(self) -> DetectorEnsemble:
        """The trio of this pipeline's mode, its thresholds calibrated out of sample: no baseline window is scored
        by detectors fitted on a window that shares its samples."""
        per_window = min(0.5, self.settings.trio_risk * self.settings.stride_s / SECONDS_PER_DAY)
        trio = paper_detectors if self.settings.mode == "paper" else standard_detectors
        overlapping = math.ceil(self.settings.window_s / self.settings.stride_s - 1e-9) - 1
        calibrated = self.settings.mode == "calibrated" and self.settings.trailing_s
        trailing = self.settings.trailing_s / self.settings.stride_s if calibrated else None
        return DetectorEnsemble(trio(self.settings.seed), self.settings.mode, self.settings.min_agreement,
                                per_window, calibration_gap=overlapping, trailing_windows=trailing)

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
        """The channels the trio judges (and the watch's residuals): pruned by correlation, or every one in the
        paper's mode, where §4.1's pruning chose which metrics are collected and a table's columns are that choice."""
        if self.settings.selection_threshold is None or self.settings.mode == "paper":
            return None
        subsystems = tuple(self.subsystem_of[n] for n in self.signal_names)
        return select_channels(baseline_signal, self.signal_names, subsystems, self.settings.selection_threshold)

    def _remember(self, features: np.ndarray, flagged: bool) -> bool:
        """Keep unflagged windows for the rolling baseline; refit on them every `refit_every` windows, at the
        host's own phase (hosts that started together refit apart). The paper's trio keeps its fit (§4.3), and so
        does a trio whose thresholds follow its recent scores (`trailing_s`): it judges against the whole baseline."""
        if not flagged and self.windows_seen % self.settings.baseline_stride == 0:
            self._recent.append(features)  # every few windows: a longer span in less memory
        due = (self.windows_seen + self.refit_phase) % self.settings.refit_every == 0
        if due and len(self._recent) >= min(self.settings.warmup_windows, self._recent.capacity):
            if self._trio_refits:
                self.ensemble.refit(self._recent.windows())
                self._recent.recode()
            self.watch.refit()
            return True
        return False

    def _feature_evidence(self, z: np.ndarray, features: np.ndarray | None = None) -> np.ndarray:
        """Each signal's largest |z| over its window features (0 for a signal the trio does not judge) and, given the
        features, over their coordinates of the Mahalanobis detector's whitened deviation, where a broken correlation
        shows on the features that broke it."""
        evidence = np.zeros(len(self.signal_names))
        owners = np.flatnonzero(self.kept)[self.layout.channel_of_feature]
        np.maximum.at(evidence, owners, np.nan_to_num(np.abs(z)))
        mahalanobis = [d for d in self.ensemble.detectors if d.name == "mahalanobis"] if features is not None else []
        for detector in mahalanobis:
            np.maximum.at(evidence, owners, np.nan_to_num(np.sqrt(detector.contributions(features[None, :])[0])))
        return evidence

    def _evidence(self, features: np.ndarray, z: np.ndarray) -> tuple[Contribution, ...]:
        zscore = self.ensemble.detectors[0]
        return tuple(strongest_contributions(z, z, features, zscore.mean, zscore.scale, self.layout.name_parts,
                                             self.settings.evidence_limit))

    def _context(self, measured: MeasuredWindow, z: np.ndarray | None) -> WindowContext:
        return window_context(measured.signal, measured.steps, (self._retrans, self._segments, self._tx_bytes), z,
                              self._effect_columns)

    def state(self) -> dict:
        """The learned baseline (selection and fitted detectors) as JSON values, to survive a restart."""
        if not self.baseline_ready:
            raise RuntimeError("HostPipeline.state called before its baseline was learned")
        return {"signal_names": list(self.signal_names), "learned_with": self.settings.learned_with(),
                "windows_seen": self.windows_seen,
                "selection": self.selection.to_json() if self.selection else None,
                "ensemble": self.ensemble.state(), "model": self.watch.bands.to_json(), **self.columns.state()}

    def restore(self, state: dict) -> bool:
        """Take over a saved baseline learned on the same channels with the same settings; whether it was taken."""
        if baseline_misfit(state, self.signal_names, self.settings.learned_with()):
            return False
        self.selection = Selection.from_json(state["selection"]) if state["selection"] else None
        self.kept = self.selection.mask(self.signal_names) if self.selection else np.ones(len(self.signal_names), bool)
        self._set_layout()
        self.ensemble = DetectorEnsemble.from_state(state["ensemble"])
        self.columns.restore(state)
        self.watch = self._learned_watch()
        self.watch.restore(ChannelBands.from_json(state["model"]))
        self.windows_seen = state["windows_seen"]
        self.restored_through_ns = self._state_through_ns = state.get("through_ns")
        return True


_EFFECT_PREFIXES = (("irq.", "softirq."), ("cpu.busy_mhz.", "cpu.freq_mhz."), ("gpu.power.",))


def _indices(names: tuple[str, ...], wanted: tuple[str, ...], prefix: bool = False) -> list[int]:
    return [i for i, name in enumerate(names) if (name.startswith(wanted) if prefix else name in wanted)]
