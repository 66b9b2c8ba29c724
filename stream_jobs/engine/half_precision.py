"""Rows of features kept in float16: distances in units of each column's spread, which float16 holds to within
0.05 % of the distance whatever the column's units or offset (float32 of the raw value loses a small spread on a
large level: a gauge of 64 GB that moves by a few kB). A distance beyond float16's reach widens its column's unit by a
power of two rather than being clipped. A calibrated host's rolling baseline and the cross-host learning of each
host's offsets keep their rows so (`Float16Rows`), in a quarter of the memory of float64."""

from __future__ import annotations

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
    last restarted, or of the first row kept. The rows lie in one block, a ring from `_first` once full, grown by a
    quarter while it fills (a host holds little more than it keeps). A widened unit recodes its columns in every
    row in place, with no copy of the rows: a 700-channel host's first 120 windows of cross-host learning, when
    units widen often, take under half the time that rows held one by one took."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self._block = np.zeros((0, 0), dtype=np.float16)
        self._first = 0  # the oldest row's place in the block
        self._count = 0
        self._center: np.ndarray | None = None  # float64: a level of 64 GB keeps its bytes
        self._unit: np.ndarray | None = None  # float32: a unit needs no more digits than the distances

    def __len__(self) -> int:
        return self._count

    def clear(self) -> None:
        self._empty(0, 0)
        self._center = self._unit = None

    def restart(self, rows: np.ndarray) -> None:
        """Keep only `rows` (windows × features), coded against their own mean and spread."""
        rows = np.asarray(rows, dtype=np.float64)
        self._center, self._unit = column_units(rows)
        self._empty(min(len(rows), self.capacity), rows.shape[1] if rows.ndim == 2 else 0)
        for row in rows:
            self._keep(self._encode(row))

    def recode(self) -> None:
        """Learn the coding again from the rows kept, e.g. after a refit on them."""
        if self._count:
            self.restart(self.windows())

    def append(self, features: np.ndarray) -> None:
        """Keep one window's features; the first row kept without a coding (after a restored fit) gives one."""
        if self._center is None:
            self._center, self._unit = column_units(np.asarray(features, dtype=np.float64)[None, :])
        self._keep(self._encode(features))  # coding it first may widen the unit, and recode the rows kept

    def thin(self) -> None:
        """Keep every other row, the oldest first: a span twice as long in the same rows."""
        kept = self.coded()[::2]
        self._empty(len(kept), self._block.shape[1])
        self._block[:len(kept)], self._count = kept, len(kept)

    def coded(self) -> np.ndarray:
        """The rows as kept, oldest first: windows × features of float16 distances, a copy."""
        order = (self._first + np.arange(self._count)) % max(len(self._block), 1)
        return self._block[order]

    def bytes_to_fill(self, features: int) -> int:
        """What the rows not yet kept will hold once every one of the `capacity` is."""
        return (self.capacity - self._count) * features * np.dtype(np.float16).itemsize

    def windows(self) -> np.ndarray:
        """The kept rows, windows × features in float64."""
        if not self._count:
            return np.zeros((0, 0 if self._center is None else len(self._center)))
        return self.coded().astype(np.float64) * self._unit + self._center

    def _empty(self, rows: int, features: int) -> None:
        self._block = np.zeros((rows, features), dtype=np.float16)
        self._first = self._count = 0

    def _keep(self, row: np.ndarray) -> None:
        """Keep a coded row as the newest, in place of the oldest once `capacity` are kept."""
        if self._count == self.capacity:
            self._block[self._first] = row
            self._first = (self._first + 1) % self.capacity
            return
        if self._count and self._block.shape[1] != row.size:
            raise ValueError(f"a row of {row.size} features among rows of {self._block.shape[1]}; restart first")
        if self._count == len(self._block) or self._block.shape[1] != row.size:
            grown = np.zeros((min(self.capacity, len(self._block) + max(1, len(self._block) // 4)), row.size),
                             dtype=np.float16)
            if self._count:
                grown[:self._count] = self.coded()
            self._block, self._first = grown, 0
        self._block[(self._first + self._count) % len(self._block)] = row
        self._count += 1

    def _encode(self, features: np.ndarray) -> np.ndarray:
        distances = (np.asarray(features, dtype=np.float64) - self._center) / self._unit
        factor = widening(distances)
        if factor is not None:
            self._widen(factor)
            distances = distances / factor
        return distances.astype(np.float16)

    def _widen(self, factor: np.ndarray) -> None:
        """Grow the units by `factor`, recoding only the widened columns, in every row kept at once (the rows not
        yet kept are zeros, and stay so)."""
        self._unit = (self._unit * factor).astype(np.float32)
        if not self._count:
            return
        widened = np.flatnonzero(factor != 1.0)
        self._block[:, widened] = self._block[:, widened] / factor[widened]
