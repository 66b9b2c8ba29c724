"""Alert thresholds drawn from the baseline's own score distribution, so a clean run raises (almost) nothing."""

from __future__ import annotations

import bisect
import math
from collections import deque

import numpy as np

# Maximum likelihood on the generalized Pareto is unstable on fewer peaks than this, which the method of moments
# fits instead; a baseline of a few hundred windows or less has its initial threshold lowered to reach this many.
MIN_PEAKS = 10
CHI_SQUARED_1_AT_5_PERCENT = 3.841
# A tail fitted to a few peaks can run away: no threshold sits further past the baseline's maximum than this many
# times the maximum's own distance from the median.
EXTRAPOLATION_LIMIT = 2.0


def baseline_threshold(baseline_scores: np.ndarray, quantile: float = 0.99, margin: float = 2.0) -> float:
    """The baseline's upper quantile plus `margin` times its distance from the median.

    A window must sit well beyond anything the baseline produced, not merely in its top 1 % (the paper's rule,
    which flags about 36 windows per host-hour on a clean run).
    """
    upper = float(np.quantile(baseline_scores, quantile))
    centre = float(np.median(baseline_scores))
    return upper + margin * max(upper - centre, 1e-9)


class PotThreshold:
    """Peaks over threshold (SPOT, Siffer et al. KDD 2017): the score a clean window exceeds with probability `risk`.

    The baseline's scores above their `initial_quantile` are the peaks; a generalized Pareto tail fitted to their
    excesses extrapolates past the largest baseline score. The default risk, 1e-4 per window, is about one false
    window in three hours at a 1 s stride. Where the initial quantile leaves fewer than `MIN_PEAKS` peaks (a baseline
    under 500 scores), it is lowered to leave that many, a third of the baseline at most: a cruder tail, but one
    that extrapolates. The threshold is never below the baseline's own 1 − `risk` quantile (its maximum, for a risk
    below one in its number of scores), which is all that a tiny baseline (under 6 scores) or one whose peaks are
    identical yields, nor more than `EXTRAPOLATION_LIMIT` times the
    maximum's distance from the median beyond it.

    >>> scores = np.random.default_rng(0).exponential(size=3000)
    >>> round(PotThreshold().fit(scores), 1)   # the exact exponential quantile is −ln(1e-4) ≈ 9.2
    9.6
    """

    def __init__(self, risk: float = 1e-4, initial_quantile: float = 0.98):
        if not 0.0 < risk < 1.0 or not 0.0 < initial_quantile < 1.0:
            raise ValueError(f"risk {risk} and initial_quantile {initial_quantile} must both lie in (0, 1)")
        self.risk = risk
        self.initial_quantile = initial_quantile
        self.threshold = math.inf
        self.tail: dict = {}

    @property
    def fitted(self) -> bool:
        return math.isfinite(self.threshold)

    def fit(self, baseline_scores: np.ndarray) -> float:
        """Calibrate on a baseline's scores; returns the alert threshold (a window is flagged above it)."""
        scores = np.asarray(baseline_scores, dtype=np.float64)
        scores = scores[np.isfinite(scores)]
        if scores.size == 0:
            raise ValueError("PotThreshold.fit needs at least one finite baseline score")
        initial = self._initial_threshold(np.sort(scores))
        excesses = scores[scores > initial] - initial
        shape, scale, method = fit_tail(excesses)
        tail_risk = self.risk * scores.size / max(excesses.size, 1)
        if method == "none":
            extrapolated = -math.inf
        elif tail_risk >= 1.0:  # the risk is not in the tail at all: the empirical quantile answers it
            extrapolated = float(np.quantile(scores, 1.0 - self.risk))
        else:
            extrapolated = initial + excess_quantile(shape, scale, tail_risk)
        highest, middle = float(scores.max()), float(np.median(scores))
        observed = float(np.quantile(scores, 1.0 - self.risk, method="higher"))  # the maximum for a risk below 1/n
        self.threshold = min(max(extrapolated, observed), highest + EXTRAPOLATION_LIMIT * (highest - middle))
        self.tail = {"initial": initial, "peaks": int(excesses.size), "baseline_size": int(scores.size),
                     "shape": shape, "scale": scale, "method": method}
        return self.threshold

    def _initial_threshold(self, ordered: np.ndarray) -> float:
        """The `initial_quantile` of the scores, lowered where that leaves fewer than `MIN_PEAKS` above it."""
        quantile = float(np.quantile(ordered, self.initial_quantile))
        wanted = min(MIN_PEAKS, ordered.size // 3)
        if np.count_nonzero(ordered > quantile) >= wanted:
            return quantile
        return float(ordered[ordered.size - wanted - 1])

    def state(self) -> dict:
        """Settings and fitted tail as JSON values."""
        return {"kind": "pot", "risk": self.risk, "initial_quantile": self.initial_quantile,
                "threshold": self.threshold if self.fitted else None, "tail": self.tail}

    @classmethod
    def from_state(cls, state: dict) -> "PotThreshold":
        """The calibrated threshold whose `state()` this is."""
        threshold = cls(state["risk"], state["initial_quantile"])
        threshold.threshold = math.inf if state["threshold"] is None else state["threshold"]
        threshold.tail = dict(state["tail"])
        return threshold


def fit_tail(excesses: np.ndarray) -> tuple[float, float, str]:
    """Shape ξ ≥ 0 and scale σ of a generalized Pareto fitted to excesses, and the method that gave them.

    Some tens of peaks say little about ξ, and a wrong ξ moves a 1e-4 quantile a long way: a bounded tail (ξ < 0)
    sets the threshold too low, a spurious heavy one (ξ > 0, often one stray peak) too high. So the exponential
    tail (ξ = 0, σ = mean excess) stands unless a likelihood-ratio test prefers ξ > 0 at the 5 % level
    (Coles, An Introduction to Statistical Modeling of Extreme Values, 2001, §2.6.6); light tails are then
    overestimated, erring toward silence. Excesses with no spread have no tail ("none").
    """
    excesses = np.asarray(excesses, dtype=np.float64)
    if excesses.size < 2 or np.var(excesses) <= 0:
        return 0.0, 0.0, "none"
    if excesses.size >= MIN_PEAKS:
        fitted, method = _heavy_tail_likelihood_fit(excesses), "likelihood"
    else:
        fitted, method = _moments_fit(excesses), "moments"
    if fitted is None or not _heavier_than_exponential(excesses, *fitted):
        return 0.0, float(np.mean(excesses)), "exponential"
    return fitted[0], fitted[1], method


def _heavier_than_exponential(excesses: np.ndarray, shape: float, scale: float) -> bool:
    """Whether a generalized Pareto(ξ > 0, σ) fits the excesses significantly better than the exponential
    (χ²₁ at 5 %)."""
    if not shape > 0.0:
        return False
    pareto = -excesses.size * math.log(scale) - (1.0 + 1.0 / shape) * float(np.log1p(shape / scale * excesses).sum())
    return 2.0 * (pareto - _exponential_log_likelihood(excesses)) > CHI_SQUARED_1_AT_5_PERCENT


def _exponential_log_likelihood(excesses: np.ndarray) -> float:
    return -excesses.size * (math.log(float(np.mean(excesses))) + 1.0)


# Where the profile likelihood is searched: θ·mean(x) from about an exponential tail (ξ → 0) to ξ of about 18.
_PROFILE_GRID = np.logspace(-6.0, 8.0, 57)


def _heavy_tail_likelihood_fit(excesses: np.ndarray) -> tuple[float, float] | None:
    """Maximum-likelihood ξ > 0 and σ, or None where the likelihood peaks at the exponential (ξ → 0).

    On θ = ξ/σ the likelihood is maximised by ξ = mean(log(1 + θx)) (Grimshaw, Technometrics 1993), which leaves
    one variable: its profile is evaluated on a logarithmic grid at once, then refined between the best point's
    neighbours, where a local search from one start could settle on a lesser maximum."""
    from scipy.optimize import minimize_scalar

    mean = float(np.mean(excesses))
    log_grid = np.log(_PROFILE_GRID / mean)
    profile = _profile_log_likelihood(log_grid, excesses)
    best = int(np.argmax(profile))
    if best == 0:
        return None
    bounds = (log_grid[best - 1], log_grid[min(best + 1, log_grid.size - 1)])
    found = minimize_scalar(lambda log_theta: -_profile_log_likelihood(log_theta, excesses), bounds=bounds,
                            method="bounded", options={"xatol": 1e-9})
    theta = math.exp(float(found.x))
    shape = float(np.mean(np.log1p(theta * excesses)))
    return shape, shape / theta


def _profile_log_likelihood(log_theta, excesses: np.ndarray):
    """log L of the generalized Pareto at θ = exp(log_theta) > 0, ξ = mean(log(1 + θx)), σ = ξ/θ, for each θ."""
    theta = np.exp(log_theta)
    shape = np.mean(np.log1p(np.multiply.outer(theta, excesses)), axis=-1)
    return -excesses.size * (np.log(shape / theta) + 1.0 + shape)


def _moments_fit(excesses: np.ndarray) -> tuple[float, float]:
    """Method-of-moments ξ and σ (Hosking & Wallis 1987) of excesses with some spread."""
    mean, variance = float(np.mean(excesses)), float(np.var(excesses, ddof=1))
    ratio = mean * mean / variance
    return 0.5 * (1.0 - ratio), 0.5 * mean * (ratio + 1.0)


def excess_quantile(shape: float, scale: float, tail_probability: float) -> float:
    """The excess a generalized Pareto(ξ, σ) exceeds with probability `tail_probability`."""
    if abs(shape) < 1e-9:
        return -scale * math.log(tail_probability)
    return scale / shape * (tail_probability ** -shape - 1.0)


class TopFractionThreshold:
    """The paper's rule (§4.3): flag the top `fraction` of the scores seen, 1 % by default.

    Streaming, the scores are the last `capacity` ones (36 000: ten hours at a 1 s stride), kept sorted so that
    each update costs a bisection, not a sort.

    >>> rule = TopFractionThreshold(fraction=0.1)
    >>> rule.threshold_for(np.arange(1.0, 11.0))
    9.1
    """

    def __init__(self, fraction: float = 0.01, capacity: int = 36_000):
        if not 0.0 < fraction < 1.0 or capacity < 1:
            raise ValueError(f"fraction {fraction} must lie in (0, 1) and capacity {capacity} be at least 1")
        self.fraction = fraction
        self.capacity = capacity
        self._arrivals: deque[float] = deque()
        self._sorted: list[float] = []

    @property
    def fitted(self) -> bool:
        return bool(self._sorted)

    @property
    def threshold(self) -> float:
        """The (1 − fraction) quantile of the kept scores; +inf before any score."""
        return _sorted_quantile(self._sorted, 1.0 - self.fraction) if self._sorted else math.inf

    def threshold_for(self, all_scores: np.ndarray) -> float:
        """Offline: the threshold over a whole run's scores."""
        return float(np.quantile(np.asarray(all_scores, dtype=np.float64), 1.0 - self.fraction))

    def fit(self, baseline_scores: np.ndarray) -> float:
        """Start over from a baseline's scores (the last `capacity` of them); returns the threshold."""
        self._arrivals = deque()
        self._sorted = []
        for score in np.asarray(baseline_scores, dtype=np.float64)[-self.capacity:]:
            self._add(float(score))
        return self.threshold

    def update(self, score: float) -> float:
        """Take one more score into the run (dropping the oldest beyond `capacity`); returns the threshold."""
        self._add(float(score))
        return self.threshold

    def _add(self, score: float) -> None:
        if math.isnan(score):  # a missing score says nothing about the distribution
            return
        self._arrivals.append(score)
        bisect.insort(self._sorted, score)
        if len(self._arrivals) > self.capacity:
            del self._sorted[bisect.bisect_left(self._sorted, self._arrivals.popleft())]

    def state(self) -> dict:
        """Settings and kept scores, oldest first, as JSON values."""
        return {"kind": "top_fraction", "fraction": self.fraction, "capacity": self.capacity,
                "scores": list(self._arrivals)}

    @classmethod
    def from_state(cls, state: dict) -> "TopFractionThreshold":
        """The rule, with its kept scores, whose `state()` this is."""
        rule = cls(state["fraction"], state["capacity"])
        rule.fit(np.asarray(state["scores"], dtype=np.float64))
        return rule


def _sorted_quantile(ordered: list[float], quantile: float) -> float:
    """np.quantile's default (linear) interpolation on an already sorted list."""
    position = quantile * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (position - below) * (ordered[above] - ordered[below])
