"""What the engine concludes about one window of one host, and the window's context the cluster stage needs."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from stream_jobs.engine.attribution import Contribution
from stream_jobs.engine.channel_watch import WatchVerdict


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
    ranked_channels: tuple[str, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class WindowContext:
    """What the cluster stage needs besides channel means: the window's retransmission context (paper §6)."""

    retransmits: float = 0.0
    segments_out: float = 0.0
    traffic_burstiness: float = 0.0
    irq_z: float = 0.0
    cpu_freq_z: float = 0.0
    gpu_power_z: float = 0.0
