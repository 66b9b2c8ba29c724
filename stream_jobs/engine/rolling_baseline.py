"""The clean windows a calibrated host refits its detectors on, kept in a quarter of the memory of float64.

A host keeps every few clean windows' features (thousands per window) to learn its baseline again from. Each row is
kept as float16 distances from the kept rows' mean in units of their spread (half_precision.py). The coding is learned
again at each refit, so a host that drifts is measured from where it now is.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from stream_jobs.engine.half_precision import column_units, widening


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
        self._center, self._unit = column_units(rows)
        self._rows.extend(self._encode(row) for row in rows)

    def recode(self) -> None:
        """Learn the coding again from the rows kept, e.g. after a refit on them."""
        if self._rows:
            self.restart(self.windows())

    def append(self, features: np.ndarray) -> None:
        """Keep one window's features; the first row kept without a coding (after a restored fit) gives one."""
        if self._center is None:
            self._center, self._unit = column_units(np.asarray(features, dtype=np.float64)[None, :])
        row = self._encode(features)  # first: coding it may widen the unit, and recode the rows kept
        self._rows.append(row)

    def bytes_to_fill(self, features: int) -> int:
        """What the rows not yet kept will hold once every one of the `capacity` is."""
        return (self.capacity - len(self._rows)) * features * np.dtype(np.float16).itemsize

    def windows(self) -> np.ndarray:
        """The kept rows, windows × features in float64."""
        if not self._rows:
            return np.zeros((0, 0 if self._center is None else len(self._center)))
        return np.asarray(self._rows, dtype=np.float64) * self._unit + self._center

    def _encode(self, features: np.ndarray) -> np.ndarray:
        distances = (np.asarray(features, dtype=np.float64) - self._center) / self._unit
        factor = widening(distances)
        if factor is not None:
            self._unit = (self._unit * factor).astype(np.float32)
            self._rows = deque(((row / factor).astype(np.float16) for row in self._rows), maxlen=self.capacity)
            distances = distances / factor
        return distances.astype(np.float16)
