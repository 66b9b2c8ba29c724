"""Z-score detector (paper §4.3): a window's score is the mean absolute z of its features against a baseline."""

from __future__ import annotations

import math
import warnings

import numpy as np

from stream_jobs.engine.column_stats import nanmean, nanstd
from stream_jobs.engine.detectors.state import check_state, decode_array, encode_array

# |z| is capped so that one channel that was constant in the baseline cannot dominate a score on its own.
Z_CAP = 50.0
# A spread below this share of a feature's level is float64's rounding of the level, not a spread.
PRECISION_FLOOR = 1e-9


def capped(z: np.ndarray, cap: float = Z_CAP) -> np.ndarray:
    """z within ±cap, 0 where it is NaN: np.clip(np.nan_to_num(z, nan=0.0), -cap, cap) to the bit, without
    nan_to_num's four passes for infinities that the clip bounds anyway."""
    return np.clip(np.where(np.isnan(z), 0.0, z), -cap, cap)


class ZScoreDetector:
    """Standardises features by the baseline's mean and spread; NaN features take no part. |z| is capped at `cap`
    (the paper's mean absolute z has no cap: `math.inf`). The spread is floored only by `absolute_floor` and by
    `PRECISION_FLOOR` of the feature's level, where float64 stops resolving it, so a column shifted and scaled
    (a·x + b) keeps its z."""

    name = "zscore"

    def __init__(self, absolute_floor: float = 1e-9, cap: float = Z_CAP):
        self.absolute_floor = absolute_floor
        self.cap = cap
        self.mean: np.ndarray | None = None
        self.scale: np.ndarray | None = None

    @property
    def fitted(self) -> bool:
        return self.mean is not None

    def fit(self, baseline: np.ndarray) -> "ZScoreDetector":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            self.mean = nanmean(baseline, axis=0)
            spread = nanstd(baseline, axis=0)
        floor = PRECISION_FLOOR * np.abs(np.nan_to_num(self.mean)) + self.absolute_floor
        self.scale = np.fmax(np.nan_to_num(spread), floor)
        return self

    def z(self, windows: np.ndarray) -> np.ndarray:
        """Signed, capped z of every feature of every window; NaN where the feature or its baseline is missing."""
        if self.mean is None:
            raise RuntimeError("ZScoreDetector.z called before fit")
        return np.clip((windows - self.mean) / self.scale, -self.cap, self.cap)

    def score(self, windows: np.ndarray) -> np.ndarray:
        return self.score_of_z(self.z(windows))

    @staticmethod
    def score_of_z(z: np.ndarray) -> np.ndarray:
        """The windows' scores from their `z`, for a caller that needs both and computes z once."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            scores = nanmean(np.abs(z), axis=1)
        return np.where(np.isnan(scores), 0.0, scores)  # a mean of capped values is finite or NaN

    def contributions(self, windows: np.ndarray) -> np.ndarray:
        """Each feature's part in the score: its |z|, 0 where the feature or its baseline is missing."""
        return np.nan_to_num(np.abs(self.z(windows)), nan=0.0)

    def state(self) -> dict:
        """The fitted baseline as JSON values."""
        if self.mean is None:
            raise RuntimeError("ZScoreDetector.state called before fit")
        return {"name": self.name, "absolute_floor": self.absolute_floor,
                "cap": None if math.isinf(self.cap) else self.cap,
                "mean": encode_array(self.mean), "scale": encode_array(self.scale)}

    @classmethod
    def from_state(cls, state: dict) -> "ZScoreDetector":
        """A fitted detector equal to the one whose `state()` this is."""
        check_state(state, cls.name)
        cap = state.get("cap", Z_CAP)
        detector = cls(state["absolute_floor"], math.inf if cap is None else cap)
        detector.mean, detector.scale = decode_array(state["mean"]), decode_array(state["scale"])
        return detector
