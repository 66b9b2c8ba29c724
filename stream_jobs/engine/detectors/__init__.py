"""Detectors share one interface: fit(X) on baseline windows, score(X) → array (high = anomalous)."""

from __future__ import annotations

import math

from typing import Protocol, runtime_checkable

import numpy as np

from stream_jobs.engine.detectors.isolation_forest import IsolationForestDetector
from stream_jobs.engine.detectors.mahalanobis import MahalanobisPCADetector
from stream_jobs.engine.detectors.zscore import ZScoreDetector

__all__ = [
    "Detector", "paper_detectors", "restore_detector", "standard_detectors", "isolation_forest", "mahalanobis", "state",
    "zscore"
]


@runtime_checkable
class Detector(Protocol):
    """What the ensemble needs of a detector (river's AnomalyDetector, batched for numpy).

    `state()` is a JSON-serialisable dict from which `from_state` rebuilds a detector that scores identically.
    """

    name: str

    @property
    def fitted(self) -> bool: ...

    def fit(self, baseline: np.ndarray) -> "Detector": ...

    def score(self, windows: np.ndarray) -> np.ndarray: ...

    def state(self) -> dict: ...

    @classmethod
    def from_state(cls, state: dict) -> "Detector": ...


def restore_detector(state: dict) -> Detector:
    """The fitted detector whose `state()` this is, whichever kind it is."""
    kinds = {kind.name: kind for kind in (ZScoreDetector, MahalanobisPCADetector, IsolationForestDetector)}
    if state.get("name") not in kinds:
        raise ValueError(f"state is for detector {state.get('name')!r}; expected one of {sorted(kinds)}")
    return kinds[state["name"]].from_state(state)


def standard_detectors(seed: int = 0) -> list[Detector]:
    """The paper's trio (§4.3): z-score, Mahalanobis over principal components, Isolation Forest; capped z, and the
    Mahalanobis distance also along the minor components (see MahalanobisPCADetector)."""
    return [ZScoreDetector(), MahalanobisPCADetector(seed=seed), IsolationForestDetector(seed=seed)]


def paper_detectors(seed: int = 0) -> list[Detector]:
    """The trio as §4.3 writes it: the mean absolute z, the Mahalanobis distance over the principal components that
    retain 95 % of the variance, Isolation Forest; no cap on z."""
    return [ZScoreDetector(cap=math.inf), MahalanobisPCADetector(seed=seed, minor_components=False, cap=math.inf),
            IsolationForestDetector(seed=seed)]
