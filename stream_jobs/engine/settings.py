"""How the engine cuts windows, learns baselines and judges windows: one frozen settings object, the same for
live, replayed and offline runs."""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

from stream_jobs.engine.channel_watch import WatchSettings, WatchTiming
from stream_jobs.engine.decide.settings import DecisionSettings
from stream_jobs.engine.ensemble import MODES
from stream_jobs.engine.windows import windows_for

MIN_WARMUP_WINDOWS = 10  # the fewest windows a baseline's detectors and bands are fitted on
# Where the trio flags beside the channel watch, the false-finding promise is shared between them in this proportion.
TRIO_SHARE_OF_RISK = 0.5


@dataclass(frozen=True)
class EngineSettings:
    """How windows are cut, baselines learned and windows judged; the same for live, replayed and offline runs."""

    window_s: float = 3.0
    stride_s: float = 1.0
    interval_s: float = 0.1
    warmup_s: float = 30.0  # learned as the baseline before anything is judged (at least MIN_WARMUP_WINDOWS windows)
    evidence_limit: int = 5
    mode: str = "calibrated"
    risk: float = 0.5
    min_agreement: int = 1
    seed: int = 0
    selection_threshold: float | None = 0.5
    # The rolling baseline is fitted again this often, so bands follow slow drift; never more often than a window's
    # length, so that each refit learns from windows that share no samples with those the last one learned from.
    refit_every_s: float = 300.0
    baseline_capacity: int = 32
    baseline_every_s: float = 5.0  # a clean window kept for the rolling baseline this often: a longer span kept
    explain_all: bool = False
    baseline_trim: float = 0.0
    watch: WatchSettings = WatchSettings()
    decision: DecisionSettings = DecisionSettings()
    ensemble_alerts: bool = True
    # Each detector's threshold is never below the 99th percentile of its scores over about this long (flagged ones
    # too): a host's normal may move at that speed (a fault is judged for 1 % of it before it is the norm); None
    # keeps the calibrated thresholds alone.
    trailing_s: float | None = 7 * 86400.0

    def __post_init__(self):
        if not self.warmup_s > 0:
            raise ValueError(f"warmup_s is {self.warmup_s:g}; expected seconds above 0")
        if not self.risk > 0:
            raise ValueError(f"risk is {self.risk}; expected false findings per host-day above 0")
        if self.mode not in MODES:
            raise ValueError(f"mode is {self.mode!r}; expected one of {MODES}")
        if self.trailing_s is not None and not self.trailing_s > 0:
            raise ValueError(f"trailing_s is {self.trailing_s}; expected seconds above 0, or None")
        if self.selection_threshold is not None and not 0 < self.selection_threshold < 1:
            raise ValueError(f"selection_threshold is {self.selection_threshold}; expected between 0 and 1, or None")

    @property
    def watch_risk(self) -> float:
        """The channel watch's share of the false-finding promise."""
        return self.risk * (1.0 - TRIO_SHARE_OF_RISK if self.ensemble_alerts else 1.0)

    @property
    def trio_risk(self) -> float:
        """Each detector's share of the promise: the trio's, whole to each, as the three flag the same windows of
        a clean host far more often than apart (on pure noise the three together keep it)."""
        return self.risk * (TRIO_SHARE_OF_RISK if self.ensemble_alerts else 1.0)

    @property
    def warmup_windows(self) -> int:
        """The windows of `warmup_s`, and never fewer than a baseline needs."""
        return max(MIN_WARMUP_WINDOWS, windows_for(self.warmup_s, self.stride_s))

    @property
    def refit_every(self) -> int:
        return windows_for(max(self.refit_every_s, self.window_s), self.stride_s)

    @property
    def baseline_stride(self) -> int:
        return windows_for(self.baseline_every_s, self.stride_s)

    @property
    def rolling_baseline_full_s(self) -> float:
        """Seconds into a host's run after which its rolling baseline holds all it keeps (every `baseline_stride`-th
        window of the warm-up, then of the clean windows judged, up to `baseline_capacity`)."""
        return self._filled_after_s(self.baseline_capacity, self.baseline_stride)

    @property
    def state_full_s(self) -> float:
        """Seconds into a host's run after which all it keeps is full: the rolling baseline and the windows its
        channel watch keeps (every `history_every_s`, over the longer of its history and adoption spans). A host's
        memory measured earlier is short of its steady state."""
        timing = WatchTiming.of(self.watch, self.stride_s, self.window_s)
        kept = max(timing.history_windows, 2, timing.adopt_after // timing.history_stride)  # as ChannelWatch keeps
        return max(self.rolling_baseline_full_s, self._filled_after_s(kept, timing.history_stride))

    def _filled_after_s(self, capacity: int, stride: int) -> float:
        """When rows kept every `stride`-th window, from the warm-up's on, number `capacity`."""
        from_warmup = math.ceil(self.warmup_windows / stride)
        judged = max(0, capacity - from_warmup) * stride
        return self.window_s + (self.warmup_windows + judged - 1) * self.stride_s  # the first window ends at window_s

    def learned_with(self) -> dict:
        """The settings a learned baseline depends on: one learned with other windows, another sampling interval,
        promise or mode does not fit a pipeline of these settings."""
        return {"window_s": self.window_s, "stride_s": self.stride_s, "interval_s": self.interval_s,
                "mode": self.mode, "risk": self.risk, "selection_threshold": self.selection_threshold,
                "seed": self.seed}


def refit_phase(host: str, refit_every: int) -> int:
    """A host's offset in the refit cycle, the same in every process and run (replays refit where live did).

    >>> refit_phase("gpu-node-17", 300) == refit_phase("gpu-node-17", 300) < 300
    True
    """
    return zlib.crc32(host.encode("utf-8")) % refit_every
