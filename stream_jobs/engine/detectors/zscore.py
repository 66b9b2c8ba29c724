"""Z-score detector (paper §4.3): a window's score is the mean absolute z of its features against a baseline."""

from __future__ import annotations

import warnings

import numpy as np

# |z| is capped so that one channel that was constant in the baseline cannot dominate a score on its own.
Z_CAP = 50.0


class ZScoreDetector:
    """Standardises features by the baseline's mean and spread; NaN features take no part."""

    name = "zscore"

    def __init__(self, relative_floor: float = 1e-3, absolute_floor: float = 1e-9):
        self.relative_floor = relative_floor
        self.absolute_floor = absolute_floor
        self.mean: np.ndarray | None = None
        self.scale: np.ndarray | None = None

    def fit(self, baseline: np.ndarray) -> "ZScoreDetector":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            self.mean = np.nanmean(baseline, axis=0)
            spread = np.nanstd(baseline, axis=0)
        floor = self.relative_floor * np.abs(np.nan_to_num(self.mean)) + self.absolute_floor
        self.scale = np.fmax(np.nan_to_num(spread), floor)
        return self

    def z(self, windows: np.ndarray) -> np.ndarray:
        """Signed, capped z of every feature of every window; NaN where the feature or its baseline is missing."""
        if self.mean is None:
            raise RuntimeError("ZScoreDetector.z called before fit")
        return np.clip((windows - self.mean) / self.scale, -Z_CAP, Z_CAP)

    def score(self, windows: np.ndarray) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            scores = np.nanmean(np.abs(self.z(windows)), axis=1)
        return np.nan_to_num(scores, nan=0.0)
