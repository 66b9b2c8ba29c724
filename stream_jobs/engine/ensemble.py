"""Detector agreement (paper §4.3): each detector scores every window; agreement decides and grades the alert."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from stream_jobs.engine.detectors import Detector, paper_detectors, restore_detector, standard_detectors
from stream_jobs.engine.thresholds import PotThreshold, TopFractionThreshold
from stream_jobs.engine.trailing_quantile import TrailingQuantile

MODES = ("calibrated", "paper")
# In paper mode a window is flagged when this many detectors put it in their baseline's top fraction (§4.3).
PAPER_AGREEMENT = 2
# In calibrated mode one detector alone raises an alert only when its score is at least this many times its
# threshold: far enough past its calibrated tail that the others' silence means they cannot see it (a broken correlation
# that only the Mahalanobis detector sees), not that it is noise.
LONE_DETECTOR_MARGIN = 3.0
# Thresholds are floored here so that a baseline whose scores were all 0 still yields a finite severity.
THRESHOLD_FLOOR = 1e-12


@dataclass(frozen=True)
class EnsembleVerdict:
    """What the detectors said about one window, by detector name."""

    scores: dict[str, float]
    thresholds: dict[str, float]
    flagged_by: tuple[str, ...]
    severity: float
    flagged: bool


class DetectorEnsemble:
    """Detectors fitted on one baseline, each with its own threshold on its own scores.

    mode "calibrated": each threshold is a `PotThreshold` at `risk` per window, fixed until `refit`; a window is
    flagged when `min_agreement` detectors exceed their thresholds, or one exceeds its own `LONE_DETECTOR_MARGIN`
    times. mode "paper" (§4.3): each threshold is the top `fraction` of the detector's baseline scores, and a
    window is flagged when `PAPER_AGREEMENT` detectors agree.
    Severity is the mean over detectors of score / threshold in both modes: agreement raises it.

    Thresholds are calibrated on out-of-fold baseline scores (each block of windows scored by detectors fitted on
    the other blocks, less the `calibration_gap` windows either side of it that overlap it), because a detector
    scores the windows it was fitted on, or windows that share their samples, as more typical than new ones.
    With `trailing_windows`, each threshold is also never below the `trailing_quantile` of the detector's own
    recent scores (see TrailingQuantile; every judged window counts, flagged or not): the host's normal may move,
    at that bounded speed, while the calibrated threshold keeps the false-finding promise on a host that did not.
    The detectors never learn from what they judge; the caller decides which windows go into `refit`.
    """

    def __init__(self, detectors: list[Detector] | None = None, mode: str = "calibrated", min_agreement: int = 2,
                 risk: float = 1e-4, fraction: float = 0.01, calibration_folds: int = 5, calibration_gap: int = 0,
                 trailing_windows: float | None = None, trailing_quantile: float = 0.99):
        if detectors is None:
            detectors = paper_detectors() if mode == "paper" else standard_detectors()
        detectors = list(detectors)
        names = [detector.name for detector in detectors]
        if mode not in MODES:
            raise ValueError(f"mode is {mode!r}; expected one of {MODES}")
        if not detectors or len(set(names)) != len(names):
            raise ValueError(f"detectors are {names}; expected at least one, each name once")
        if min_agreement < 1:
            raise ValueError(f"min_agreement is {min_agreement}; expected at least 1")
        self.detectors = detectors
        self.mode = mode
        self.min_agreement = min_agreement
        self.risk = risk
        self.fraction = fraction
        self.calibration_folds = calibration_folds
        self.calibration_gap = calibration_gap
        self.thresholds: list[PotThreshold | TopFractionThreshold] = []
        self.trailing_windows, self.trailing_quantile = trailing_windows, trailing_quantile
        self.trailing: list[TrailingQuantile] = []

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(detector.name for detector in self.detectors)

    @property
    def fitted(self) -> bool:
        return bool(self.thresholds) and all(detector.fitted for detector in self.detectors)

    def fit(self, baseline: np.ndarray) -> "DetectorEnsemble":
        """Fit every detector on the baseline windows and calibrate its threshold on their scores."""
        baseline = np.asarray(baseline, dtype=np.float64)
        calibration = [out_of_fold_scores(detector, baseline, self.calibration_folds, self.calibration_gap)
                       for detector in self.detectors]
        for detector in self.detectors:
            detector.fit(baseline)
        share_equal_means(self.detectors)
        self.thresholds = [self._new_threshold() for _ in self.detectors]
        for threshold, scores in zip(self.thresholds, calibration):
            threshold.fit(scores)
        if self.trailing_windows and not self.trailing:
            self.trailing = [self._new_trailing(scores) for scores in calibration]
        return self

    def _new_trailing(self, baseline_scores: np.ndarray) -> TrailingQuantile:
        """A trailing quantile that has seen the baseline's out-of-fold scores, read from their median in units of
        their interquartile range."""
        finite = baseline_scores[np.isfinite(baseline_scores)]
        low, median, high = np.quantile(finite, [0.25, 0.5, 0.75]) if finite.size else (0.0, 0.0, 1.0)
        trailing = TrailingQuantile(self.trailing_windows, self.trailing_quantile, float(median),
                                    max(float(high - low), THRESHOLD_FLOOR))
        trailing.extend(finite)
        return trailing

    def refit(self, baseline: np.ndarray) -> "DetectorEnsemble":
        """Learn a new baseline, e.g. the recent windows that were not flagged; replaces detectors and calibrated
        thresholds (the trailing quantiles go on with what they saw)."""
        return self.fit(baseline)

    def scores(self, windows: np.ndarray, known: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """(windows, detectors) scores, detectors in `names` order; `known` holds the scores of the windows that
        a caller already has, by detector name."""
        if not self.fitted:
            raise RuntimeError("DetectorEnsemble.scores called before fit")
        windows, known = np.asarray(windows, dtype=np.float64), known or {}
        return np.column_stack([known[detector.name] if detector.name in known else detector.score(windows)
                                for detector in self.detectors])

    def judge(self, windows: np.ndarray, known: dict[str, np.ndarray] | None = None) -> list[EnsembleVerdict]:
        """One verdict per window, in order (`known`: as in `scores`)."""
        scores = self.scores(windows, known)
        thresholds = self._thresholds(scores)
        ratios = scores / np.fmax(thresholds, THRESHOLD_FLOOR)
        exceeded = scores > thresholds
        if self.mode == "paper":
            flagged = exceeded.sum(axis=1) >= min(PAPER_AGREEMENT, len(self.detectors))
        else:
            flagged = (exceeded.sum(axis=1) >= self.min_agreement) | (ratios >= LONE_DETECTOR_MARGIN).any(axis=1)
        return [self._verdict(*row) for row in zip(scores, thresholds, exceeded, ratios.mean(axis=1), flagged)]

    def _thresholds(self, scores: np.ndarray) -> np.ndarray:
        """Each window's thresholds: the calibrated ones, raised to the trailing quantiles as they stood before it;
        the windows' scores are then counted in order."""
        calibrated = np.array([threshold.threshold for threshold in self.thresholds], dtype=np.float64)
        if not self.trailing:
            return np.broadcast_to(calibrated, scores.shape)
        thresholds = np.empty_like(scores)
        for row, window_scores in enumerate(scores):
            thresholds[row] = [max(floor, trailing.value) for floor, trailing in zip(calibrated, self.trailing)]
            for trailing, score in zip(self.trailing, window_scores.tolist()):
                trailing.add(score)
        return thresholds

    def _verdict(self, scores, thresholds, exceeded, severity, flagged) -> EnsembleVerdict:
        return EnsembleVerdict(dict(zip(self.names, map(float, scores))), dict(zip(self.names, map(float, thresholds))),
                               tuple(name for name, hit in zip(self.names, exceeded) if hit), float(severity),
                               bool(flagged))

    def _new_threshold(self) -> PotThreshold | TopFractionThreshold:
        return PotThreshold(self.risk) if self.mode == "calibrated" else TopFractionThreshold(self.fraction)

    def state(self) -> dict:
        """Settings, fitted detectors and thresholds as JSON values."""
        if not self.fitted:
            raise RuntimeError("DetectorEnsemble.state called before fit")
        return {"mode": self.mode, "min_agreement": self.min_agreement, "risk": self.risk, "fraction": self.fraction,
                "calibration_folds": self.calibration_folds, "calibration_gap": self.calibration_gap,
                "detectors": [detector.state() for detector in self.detectors],
                "thresholds": [threshold.state() for threshold in self.thresholds],
                "trailing_windows": self.trailing_windows, "trailing_quantile": self.trailing_quantile,
                "trailing": [trailing.state() for trailing in self.trailing]}

    @classmethod
    def from_state(cls, state: dict) -> "DetectorEnsemble":
        """The fitted ensemble whose `state()` this is; it judges as the original would have."""
        ensemble = cls([restore_detector(detector) for detector in state["detectors"]], state["mode"],
                       state["min_agreement"], state["risk"], state["fraction"], state["calibration_folds"],
                       state.get("calibration_gap", 0), state.get("trailing_windows"),
                       state.get("trailing_quantile", 0.99))
        ensemble.trailing = [TrailingQuantile.from_state(trailing) for trailing in state.get("trailing", [])]
        kinds = {"pot": PotThreshold, "top_fraction": TopFractionThreshold}
        ensemble.thresholds = [kinds[threshold["kind"]].from_state(threshold) for threshold in state["thresholds"]]
        share_equal_means(ensemble.detectors)
        return ensemble


def load_fitting() -> None:
    """Fit a small ensemble once, so that what a first fit loads (scipy's optimiser for the tail fit) is loaded now. A
    process that watches the host it runs on calls this before it learns the host's baseline: its own one-off
    growth then lies before the baseline, not in the first windows judged after it."""
    DetectorEnsemble(standard_detectors(0), "calibrated", 1, 1e-4).fit(np.random.default_rng(0).normal(size=(64, 4)))


def share_equal_means(detectors: list[Detector]) -> None:
    """Detectors that learned the same per-feature mean (most do: thousands of float64 per host) hold one array."""
    means: list[np.ndarray] = []
    for detector in detectors:
        mean = getattr(detector, "mean", None)
        if mean is None:
            continue
        same = next((kept for kept in means if np.array_equal(kept, mean, equal_nan=True)), None)
        if same is None:
            means.append(mean)
        else:
            detector.mean = same


def out_of_fold_scores(detector: Detector, baseline: np.ndarray, folds: int, gap: int = 0) -> np.ndarray:
    """Each baseline window scored by a copy of `detector` fitted on the other contiguous blocks of windows, less
    the `gap` windows either side of its own block (windows that overlap it share its samples).

    With fewer than two windows per block, or too few left to fit on, the windows are scored in-sample.
    """
    if folds < 2 or len(baseline) < 2 * folds:
        return copy.deepcopy(detector).fit(baseline).score(baseline)
    blocks = np.array_split(np.arange(len(baseline)), folds)
    left_out = [np.arange(max(block[0] - gap, 0), min(block[-1] + gap + 1, len(baseline))) for block in blocks]
    if len(baseline) - max(len(rows) for rows in left_out) < 2:
        return copy.deepcopy(detector).fit(baseline).score(baseline)
    return np.concatenate([copy.deepcopy(detector).fit(np.delete(baseline, rows, axis=0)).score(baseline[block])
                           for rows, block in zip(left_out, blocks)])
