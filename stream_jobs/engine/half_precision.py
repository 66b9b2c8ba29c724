"""Rows of features kept in float16: distances in units of each column's spread, which float16 holds to within
0.05 % of the distance whatever the column's units or offset (float32 of the raw value loses a small spread on a
large level: a gauge of 64 GB that moves by a few kB). A distance beyond float16's reach widens its column's unit by a
power of two rather than being clipped. A calibrated host's rolling baseline and the cross-host learning of each
host's offsets keep their rows so (`Float16Rows`), in a quarter of the memory of float64."""

from __future__ import annotations

from collections import deque

import numpy as np

FLOAT16_REACH = 2.0 ** 15  # distances are kept below this many units (float16 reaches 65,504)
UNCHANGING_UNIT = 2.0 ** -20  # the unit of a column that did not vary, relative to its level (else 1)


def column_units(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column of `rows` (windows × columns, NaN where unknown): the mean (0 where none is known) and the unit,
    the spread, or for a column that did not vary a small part of its level (1 at level 0), as float32."""
    rows = np.asarray(rows, dtype=np.float64)
    known = np.isfinite(rows)
    counts = np.maximum(known.sum(axis=0), 1)
    center = np.where(known, rows, 0.0).sum(axis=0) / counts
    spread = np.sqrt(np.where(known, (rows - center) ** 2, 0.0).sum(axis=0) / counts)
    level = np.abs(center) * UNCHANGING_UNIT
    unit = np.where(spread > 0, spread, np.where(level > 0, level, 1.0))
    float32 = np.finfo(np.float32)
    return center, np.clip(unit, float32.tiny, float32.max).astype(np.float32)


def widening(distances: np.ndarray) -> np.ndarray | None:
    """Per column, the power of two by which its unit must grow for `distances` to lie within float16's reach;
    None when every finite one already does."""
    beyond = np.isfinite(distances) & (np.abs(distances) >= FLOAT16_REACH)
    if not beyond.any():
        return None
    factor = np.ones(distances.shape[-1])
    factor[beyond] = 2.0 ** np.ceil(np.log2(np.abs(distances[beyond]) / FLOAT16_REACH * 2))
    return factor


class Float16Rows:
    """Up to `capacity` rows (the oldest dropped first), coded against the mean and spread of the rows kept when
    last restarted, or of the first row kept."""

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

    def thin(self) -> None:
        """Keep every other row, the oldest first: a span twice as long in the same rows."""
        self._rows = deque(list(self._rows)[::2], maxlen=self.capacity)

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
            self._widen(factor)
            distances = distances / factor
        return distances.astype(np.float16)

    def _widen(self, factor: np.ndarray) -> None:
        """Grow the units by `factor`, recoding only the widened columns, of every row kept at once: the cross-host
        learning keeps hundreds of rows a host, and one pass over them stacked costs a sixth of a pass row by row."""
        self._unit = (self._unit * factor).astype(np.float32)
        if not self._rows:
            return
        widened = np.flatnonzero(factor != 1.0)
        rows = np.asarray(self._rows)
        rows[:, widened] = rows[:, widened] / factor[widened]
        self._rows = deque(map(np.copy, rows), maxlen=self.capacity)  # rows of their own, not views of one block
