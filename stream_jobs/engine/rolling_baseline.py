"""The clean windows a calibrated host refits its detectors on, kept in a quarter of the memory of float64.

A host keeps every few clean windows' features (thousands per window) to learn its baseline again from. Each row is
kept as float16 distances from the kept rows' mean in units of their spread: float16 holds such a distance to within
0.05 % of it, whatever the feature's units or offset, where float32 of the raw value loses a small spread on a large
level (a gauge of 64 GB that moves by a few kB). The coding is learned again at each refit, so a host that drifts is
measured from where it now is; a feature that moves further than float16 reaches widens its unit, never clips.
"""

from __future__ import annotations

from collections import deque

import numpy as np

FLOAT16_REACH = 2.0 ** 15  # distances are kept below this many units (float16 reaches 65,504)
UNCHANGING_UNIT = 2.0 ** -20  # the unit of a feature that did not vary, relative to its level (else 1)


class RollingBaseline:
    """Up to `capacity` feature rows, coded against the mean and spread of the rows kept when last restarted."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self._rows: deque[np.ndarray] = deque(maxlen=capacity)
        self._center: np.ndarray | None = None  # float64: a level of 64 GB keeps its bytes
        self._unit: np.ndarray | None = None  # float32: a unit needs no more digits than the distances

    def __len__(self) -> int:
        return len(self._rows)

    def clear(self) -> None:
        self._rows.clear()
        self._center = self._unit = None

    def restart(self, rows: np.ndarray) -> None:
        """Keep only `rows` (windows × features), coded against their own mean and spread."""
        rows = np.asarray(rows, dtype=np.float64)
        self._rows.clear()
        self._center, self._unit = _coding(rows)
        self._rows.extend(self._encode(row) for row in rows)

    def recode(self) -> None:
        """Learn the coding again from the rows kept, e.g. after a refit on them."""
        if self._rows:
            self.restart(self.windows())

    def append(self, features: np.ndarray) -> None:
        """Keep one window's features; the first row kept without a coding (after a restored fit) gives one."""
        if self._center is None:
            self._center, self._unit = _coding(np.asarray(features, dtype=np.float64)[None, :])
        row = self._encode(features)  # first: coding it may widen the unit, and recode the rows kept
        self._rows.append(row)

    def windows(self) -> np.ndarray:
        """The kept rows, windows × features in float64."""
        if not self._rows:
            return np.zeros((0, 0 if self._center is None else len(self._center)))
        return np.asarray(self._rows, dtype=np.float64) * self._unit + self._center

    def _encode(self, features: np.ndarray) -> np.ndarray:
        distances = (np.asarray(features, dtype=np.float64) - self._center) / self._unit
        beyond = np.isfinite(distances) & (np.abs(distances) >= FLOAT16_REACH)
        if beyond.any():
            distances = self._widen(beyond, distances)
        return distances.astype(np.float16)

    def _widen(self, beyond: np.ndarray, distances: np.ndarray) -> np.ndarray:
        """Give the features that moved beyond float16's reach a unit that holds the move, and code their kept
        values in it."""
        factor = np.ones_like(distances)
        factor[beyond] = 2.0 ** np.ceil(np.log2(np.abs(distances[beyond]) / FLOAT16_REACH * 2))
        self._unit = (self._unit * factor).astype(np.float32)
        self._rows = deque(((row / factor).astype(np.float16) for row in self._rows), maxlen=self.capacity)
        return distances / factor


def _coding(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per feature: the rows' mean (0 where none is known) and spread (for one that did not vary, a small part of
    its level, or 1 at level 0)."""
    if len(rows) == 0:
        return np.zeros(rows.shape[1]), np.ones(rows.shape[1], dtype=np.float32)
    known = np.isfinite(rows)
    counts = known.sum(axis=0)
    center = np.where(known, rows, 0.0).sum(axis=0) / np.maximum(counts, 1)
    spread = np.sqrt(np.where(known, (rows - center) ** 2, 0.0).sum(axis=0) / np.maximum(counts, 1))
    level = np.abs(center) * UNCHANGING_UNIT
    unit = np.where(spread > 0, spread, np.where(level > 0, level, 1.0))
    float32 = np.finfo(np.float32)
    return center, np.clip(unit, float32.tiny, float32.max).astype(np.float32)
