"""One host's path through the engine: frames → windows → signals → features → detector → verdicts."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stream_jobs.engine.attribution import Contribution, claim, dominant_subsystem, top_contributions
from stream_jobs.engine.channels import ChannelTable
from stream_jobs.engine.derived import signals
from stream_jobs.engine.detectors.zscore import ZScoreDetector
from stream_jobs.engine.features import window_features
from stream_jobs.engine.thresholds import baseline_threshold
from stream_jobs.engine.windows import WindowAssembler


@dataclass(frozen=True)
class EngineSettings:
    window_s: float = 3.0
    stride_s: float = 1.0
    interval_s: float = 0.1
    warmup_windows: int = 30
    evidence_limit: int = 5

    def __post_init__(self):
        if self.warmup_windows < 5:
            raise ValueError(f"warmup_windows is {self.warmup_windows}; at least 5 baseline windows are needed")


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


class HostPipeline:
    """Windows one host's frames, learns a baseline from its first windows, then scores each new window."""

    def __init__(self, channels: ChannelTable, settings: EngineSettings = EngineSettings()):
        self.channels = channels
        self.settings = settings
        self.assembler = WindowAssembler(settings.window_s, settings.stride_s, settings.interval_s)
        self.detector = ZScoreDetector()
        self.threshold = float("inf")
        self._scored_names = tuple(n for n, s in zip(channels.names, channels.scored) if s)
        self._subsystem_of = dict(zip(channels.names, channels.subsystems))
        self._baseline: list[np.ndarray] = []

    @property
    def baseline_ready(self) -> bool:
        return self.detector.mean is not None

    def push(self, timestamp_ns: int, values: np.ndarray) -> list[WindowVerdict]:
        """Add one frame's values (catalog order); returns verdicts for the windows it completes."""
        return [self._judge(w) for w in self.assembler.push(timestamp_ns, np.asarray(values, dtype=np.float64))]

    def _features(self, timestamps_ns: np.ndarray, values: np.ndarray) -> np.ndarray:
        signal = signals(timestamps_ns, values, self.channels.cumulative)[:, self.channels.scored]
        return window_features(timestamps_ns[1:], signal).ravel()

    def _judge(self, window) -> WindowVerdict:
        features = self._features(window.timestamps_ns, window.values)
        if not self.baseline_ready:
            return self._learn(window, features)
        score = float(self.detector.score(features[None, :])[0])
        anomalous = score > self.threshold
        evidence: tuple[Contribution, ...] = ()
        subsystem, sentence = "", ""
        if anomalous:
            z = self.detector.z(features[None, :])[0]
            evidence = tuple(top_contributions(z, features, self.detector.mean, self.detector.scale,
                                               self._scored_names, self.settings.evidence_limit))
            subsystem = dominant_subsystem(list(evidence), self._subsystem_of)
            sentence = claim(evidence[0]) if evidence else "window departs from its baseline"
        return WindowVerdict(window.window_id, window.start_ns, window.end_ns, len(window.timestamps_ns), True,
                             score, self.threshold, anomalous, (self.detector.name,) if anomalous else (),
                             subsystem, sentence, evidence)

    def _learn(self, window, features: np.ndarray) -> WindowVerdict:
        self._baseline.append(features)
        if len(self._baseline) >= self.settings.warmup_windows:
            baseline = np.vstack(self._baseline)
            self.detector.fit(baseline)
            self.threshold = baseline_threshold(self.detector.score(baseline))
            self._baseline = []
        return WindowVerdict(window.window_id, window.start_ns, window.end_ns, len(window.timestamps_ns), False,
                             0.0, self.threshold, False, (), "", "", ())
