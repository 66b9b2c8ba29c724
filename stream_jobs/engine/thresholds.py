"""Alert thresholds drawn from the baseline's own score distribution, so a clean run raises (almost) nothing."""

from __future__ import annotations

import bisect
import math
import warnings
from collections import deque

import numpy as np

# Maximum likelihood on the generalized Pareto is unstable on fewer peaks than this, which the method of moments
# fits instead; a baseline of a few hundred windows or less has its initial threshold lowered to reach this many.
MIN_PEAKS = 10
CHI_SQUARED_1_AT_5_PERCENT = 3.841
# A tail fitted to a few peaks can run away: no threshold sits further past the baseline's maximum than this many
# times the maximum's own distance from the median.
EXTRAPOLATION_LIMIT = 2.0


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
    that extrapolates. The threshold is never below the baseline's maximum, which is all that a tiny baseline
    (under 6 scores) or one whose peaks are identical yields, nor more than `EXTRAPOLATION_LIMIT` times the
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
        self.threshold = min(max(extrapolated, highest), highest + EXTRAPOLATION_LIMIT * (highest - middle))
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
    overestimated, erring toward silence.
    """
    fitted = _likelihood_fit(excesses) if excesses.size >= MIN_PEAKS else None
    shape, scale, method = (*fitted, "likelihood") if fitted is not None else _moments_fit(excesses)
    if method != "none" and not (shape > 0.0 and _heavier_than_exponential(excesses, shape, scale)):
        return 0.0, float(np.mean(excesses)), "exponential"
    return shape, scale, method


def _heavier_than_exponential(excesses: np.ndarray, shape: float, scale: float) -> bool:
    """Whether the generalized Pareto fits the excesses significantly better than the exponential (χ²₁ at 5 %)."""
    with np.errstate(all="ignore"):
        pareto = float(_generalized_pareto().logpdf(excesses, shape, 0.0, scale).sum())
    exponential = -excesses.size * (math.log(float(np.mean(excesses))) + 1.0)
    return 2.0 * (pareto - exponential) > CHI_SQUARED_1_AT_5_PERCENT


def _generalized_pareto():
    """scipy's generalized Pareto; scipy.stats takes about a second to import, so only a process that fits a tail
    pays for it (not `reveal sql`, nor a command that stops at a bad option)."""
    from scipy.stats import genpareto

    return genpareto


def _likelihood_fit(excesses: np.ndarray) -> tuple[float, float] | None:
    """Maximum-likelihood ξ and σ, or None where the optimiser fails or lands where the estimate means nothing."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            shape, _, scale = _generalized_pareto().fit(excesses, floc=0.0, optimizer=_nelder_mead)
    except (ValueError, RuntimeError, FloatingPointError):
        return None
    # ξ ≤ −1 is the degenerate fit (all mass at the largest excess), not a tail
    if not (math.isfinite(shape) and math.isfinite(scale) and scale > 0 and shape > -1.0):
        return None
    return float(shape), float(scale)


def _nelder_mead(objective, start, args, disp):
    """scipy's own optimiser for its fit (Nelder-Mead from the same start), on the same objective written out in
    numpy: scipy evaluates it through its general distribution machinery, ~200 µs a call over a few hundred calls,
    which made the tail fit most of a host's refit. The result is the same, bit for bit."""
    from scipy.optimize import fmin

    return fmin(_penalised_negative_log_likelihood, start, args=args, disp=disp)


# What scipy adds to the negative log-likelihood for each excess outside the distribution's support.
_OUTSIDE_SUPPORT_PENALTY = float(np.log(np.finfo(float).max)) * 100


def _penalised_negative_log_likelihood(theta: np.ndarray, excesses: np.ndarray) -> float:
    """−log L of a generalized Pareto(ξ, σ) at location 0, as scipy's fit computes it, operation for operation:
    excesses outside the support (or of non-finite density) are left out of the sum and penalised instead."""
    shape, scale = theta
    if not np.isfinite(shape) or scale <= 0:
        return np.inf
    log_scale = len(excesses) * np.log(scale)
    standard = excesses / scale
    upper = -1.0 / shape if shape < 0 else np.inf
    with np.errstate(invalid="ignore"):
        inside = (0.0 <= standard) & (standard <= upper)
    standard = standard[inside]
    if shape != 0:
        from scipy.special import xlog1py

        log_density = -xlog1py(shape + 1.0, shape * standard) / shape
    else:
        log_density = -standard
    finite = np.isfinite(log_density)
    outside = len(excesses) - len(standard) + (finite.size - np.count_nonzero(finite))
    return -np.sum(log_density[finite]) + outside * _OUTSIDE_SUPPORT_PENALTY + log_scale


def _moments_fit(excesses: np.ndarray) -> tuple[float, float, str]:
    """Method-of-moments ξ and σ (Hosking & Wallis 1987); "none" when the excesses have no spread."""
    if excesses.size < 2 or np.var(excesses) <= 0:
        return 0.0, 0.0, "none"
    mean, variance = float(np.mean(excesses)), float(np.var(excesses, ddof=1))
    ratio = mean * mean / variance
    return 0.5 * (1.0 - ratio), 0.5 * mean * (ratio + 1.0), "moments"


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
