"""Attribution (paper §4.4): which metric–feature pairs drove an anomalous window, and a claim in words."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from stream_jobs.engine.features import FEATURES

_FEATURE_WORDS = {"mean": "mean", "std": "within-window variability", "min": "minimum", "max": "maximum",
                  "slope": "trend"}


@dataclass(frozen=True)
class Contribution:
    channel: str
    feature: str
    value: float
    baseline_mean: float
    baseline_std: float
    z: float


def top_contributions(z: np.ndarray, features: np.ndarray, baseline_mean: np.ndarray, baseline_scale: np.ndarray,
                      channel_names: tuple[str, ...], limit: int = 5) -> list[Contribution]:
    """The `limit` features of one window with the largest |z|, most extreme first (NaN z never ranks)."""
    magnitude = np.nan_to_num(np.abs(z), nan=-1.0)
    order = np.argsort(-magnitude, kind="stable")[:limit]
    width = len(FEATURES)
    return [Contribution(channel_names[i // width], FEATURES[i % width], float(features[i]),
                         float(baseline_mean[i]), float(baseline_scale[i]), float(z[i]))
            for i in order if magnitude[i] > 0]


def dominant_subsystem(contributions: list[Contribution], subsystem_of: dict[str, str]) -> str:
    """The subsystem whose contributions carry the most |z|."""
    weight: dict[str, float] = defaultdict(float)
    for c in contributions:
        weight[subsystem_of[c.channel]] += abs(c.z)
    return max(weight, key=weight.get) if weight else "unknown"


def claim(top: Contribution) -> str:
    """One sentence an operator can read, e.g. 'disk.sectors_read.sda maximum is 5.2e+04, 12.0σ above baseline'."""
    direction = "above" if top.z >= 0 else "below"
    return (f"{top.channel} {_FEATURE_WORDS[top.feature]} is {top.value:.4g}, {abs(top.z):.1f}σ {direction} "
            f"its baseline of {top.baseline_mean:.4g} ± {top.baseline_std:.3g}")
