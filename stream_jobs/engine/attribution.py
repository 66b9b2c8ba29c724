"""Attribution (paper §4.4, Appendix C): which metric–feature pairs drove an anomalous window, what kind of change
it was, which subsystem it points to, and a claim in words."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

# The temporal explanation each feature stands for, when it rose and when it fell.
EXPLANATIONS = {"mean": ("level rise", "level drop"), "std": ("variance spike", "variance drop"),
                "min": ("raised floor", "dip"), "max": ("spike", "lowered peak"),
                "skew": ("shape change", "shape change"), "kurtosis": ("shape change", "shape change"),
                "slope": ("rising trend", "falling trend"),
                "acf1": ("autocorrelation change", "autocorrelation change"),
                "stationarity": ("level shift within the window", "level shift within the window"),
                "sum": ("burst", "lull"), "bursts": ("burst", "fewer bursts than usual"),
                "residual": ("departs from what its correlated channel predicts",
                             "departs from what its correlated channel predicts"),
                "residual-std": ("correlation break", "tighter coupling than usual")}
_FEATURE_WORDS = {"mean": "mean", "std": "within-window variability", "min": "minimum", "max": "maximum",
                  "skew": "skewness", "kurtosis": "kurtosis", "slope": "trend", "acf1": "lag-1 autocorrelation",
                  "stationarity": "within-window level shift", "sum": "count", "bursts": "number of bursts",
                  "residual": "offset from its fit", "residual-std": "scatter around its fit"}


@dataclass(frozen=True)
class Contribution:
    channel: str
    feature: str
    value: float
    baseline_mean: float
    baseline_std: float
    z: float
    reference: str = ""

    @property
    def explanation(self) -> str:
        """What kind of change it was, in words that match its direction."""
        rose, fell = EXPLANATIONS.get(self.feature, ("departure from baseline", "departure from baseline"))
        return rose if self.z >= 0 else fell


def split_feature_name(feature_name: str) -> tuple[str, str]:
    """'cpu.user.cpu0:mean' → ('cpu.user.cpu0', 'mean')."""
    channel, _, feature = feature_name.rpartition(":")
    return channel, feature


def ranked_contributions(weights: np.ndarray, z: np.ndarray, features: np.ndarray, baseline_mean: np.ndarray,
                         baseline_scale: np.ndarray, feature_names: Sequence[str], limit: int) -> list[Contribution]:
    """The `limit` metric–feature pairs with the largest weight (a detector's per-feature share), most first."""
    return strongest_contributions(weights, z, features, baseline_mean, baseline_scale,
                                   lambda i: split_feature_name(feature_names[i]), limit)


def strongest_contributions(weights: np.ndarray, z: np.ndarray, features: np.ndarray, baseline_mean: np.ndarray,
                            baseline_scale: np.ndarray, named: Callable[[int], tuple[str, str]],
                            limit: int) -> list[Contribution]:
    """As ranked_contributions, with each feature's (channel, feature) given by `named`."""
    magnitude = np.abs(weights)
    magnitude[np.isnan(magnitude)] = -1.0
    order = np.argsort(-magnitude, kind="stable")[:limit]
    order = order[magnitude[order] > 0]
    return [Contribution(*named(i), value, mean, scale, z_i)
            for i, value, mean, scale, z_i in zip(order.tolist(), features[order].tolist(),
                                                  baseline_mean[order].tolist(), baseline_scale[order].tolist(),
                                                  z[order].tolist())]


def claim(top: Contribution) -> str:
    """One sentence an operator can read: the value, how far from the baseline in σ and in the channel's own units,
    and the kind of change, e.g. 'disk.sectors_read.sda mean is 5.2e+04, 12.0σ above its baseline of 1.1e+04 ± 3.4e+03
    (+4.1e+04, level rise)'."""
    direction = "above" if top.z >= 0 else "below"
    words = _FEATURE_WORDS.get(top.feature, top.feature) + (f" on {top.reference}" if top.reference else "")
    return (f"{top.channel} {words} is {top.value:.4g}, {abs(top.z):.1f}σ {direction} its baseline of "
            f"{top.baseline_mean:.4g} ± {top.baseline_std:.3g} ({top.value - top.baseline_mean:+.3g}, "
            f"{top.explanation})")
