"""A window as the engine reads it: Reveal's own footprint accounted for, every channel's and derived metric's per-step
signal, the frames' times in seconds and each column's mean; and, once the trio has judged it, its features, their z
and the trio's verdict."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stream_jobs.engine.derived import DerivedSpec, derive, signals, step_seconds
from stream_jobs.engine.ensemble import EnsembleVerdict
from stream_jobs.engine.own_footprint import OwnFootprint
from stream_jobs.engine.watched_columns import column_means
from stream_jobs.engine.windows import Window

# A rate is taken over a step of at least this share of the sampling interval (see derived.step_seconds)
MIN_STEP_SHARE = 0.5


@dataclass(frozen=True)
class MeasuredWindow:
    """One window's readings in the engine's terms; `features`, `z` and `trio` are set once the trio judged it."""

    window: Window  # with Reveal's footprint accounted for
    worked: bool  # whether Reveal worked in it
    signal: np.ndarray  # (frames − 1, channels + derived)
    steps: np.ndarray  # the seconds each step spans, at least the shortest a rate is taken over
    seconds: np.ndarray  # each frame's time, counted in those steps
    means: np.ndarray  # each signal's mean over the window
    features: np.ndarray | None = None
    z: np.ndarray | None = None
    trio: EnsembleVerdict | None = None

    def judged_by_trio(self, features: np.ndarray, z: np.ndarray, trio: EnsembleVerdict) -> MeasuredWindow:
        """This window with the trio's features, their z and its verdict."""
        return MeasuredWindow(self.window, self.worked, self.signal, self.steps, self.seconds, self.means, features, z,
                              trio)


class WindowMeasure:
    """Turns one host's windows of raw frames into MeasuredWindows: frame times count in steps of at least the
    shortest a rate is taken over (see derived.step_seconds), so that counts recovered from rates are those read."""

    def __init__(self, cumulative: np.ndarray, specs: tuple[DerivedSpec, ...], footprint: OwnFootprint,
                 interval_s: float):
        self.cumulative = cumulative
        self.specs = specs
        self.footprint = footprint
        self.min_step_s = interval_s * MIN_STEP_SHARE

    def __call__(self, window: Window) -> MeasuredWindow:
        accounted, worked = self.footprint.account(window)
        signal = self.signal(accounted)
        steps = step_seconds(accounted.timestamps_ns, self.min_step_s)
        seconds = accounted.timestamps_ns[0] / 1e9 + np.concatenate([[0.0], np.cumsum(steps)])
        return MeasuredWindow(accounted, worked, signal, steps, seconds, column_means(signal))

    def signal(self, window: Window) -> np.ndarray:
        """Per-step signals of every channel and derived metric: (frames − 1, channels + derived)."""
        base = signals(window.timestamps_ns, window.values, self.cumulative, self.min_step_s)
        if not self.specs:
            return base
        return np.hstack([base, derive(self.specs, window.timestamps_ns, window.values, self.min_step_s)])
