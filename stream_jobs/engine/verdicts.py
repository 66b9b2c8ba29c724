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
    own_activity: bool = False


@dataclass(frozen=True)
class WindowContext:
    """What the cluster stage needs besides channel means: the window's retransmission context (paper §6)."""

    retransmits: float = 0.0
    segments_out: float = 0.0
    traffic_burstiness: float = 0.0
    irq_z: float = 0.0
    cpu_freq_z: float = 0.0
    gpu_power_z: float = 0.0


def window_context(signal: np.ndarray, steps: np.ndarray, columns: tuple[list[int], list[int], list[int]],
                   z: np.ndarray | None, effect_columns: list[np.ndarray]) -> WindowContext:
    """The window's retransmissions and segments sent (counts over its steps), the burstiness of its transmitted
    bytes, and the largest |z| of each co-occurring effect's features (none while learning); `columns` are the
    signal columns of retransmissions, segments and transmitted bytes."""
    retrans, segments, tx_bytes = columns
    counted = lambda picked: float(np.nansum(signal[:, picked] * steps[:, None])) if picked else 0.0  # noqa: E731
    tx = np.nansum(signal[:, tx_bytes], axis=1) if tx_bytes else np.zeros(1)
    burstiness = float(np.std(tx) / np.mean(tx)) if np.mean(tx) > 0 else 0.0
    effects = [_largest(z, picked) for picked in effect_columns] if z is not None else []
    return WindowContext(counted(retrans), counted(segments), burstiness, *effects)


def _largest(z: np.ndarray, columns: np.ndarray) -> float:
    """The largest |z| among the columns (0 when there are none or none is finite)."""
    picked = np.abs(z[columns])
    return float(np.nanmax(picked)) if np.isfinite(picked).any() else 0.0
