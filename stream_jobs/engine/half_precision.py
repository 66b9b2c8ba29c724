"""Rows of features kept in float16: distances in units of each column's spread, which float16 holds to within
0.05 % of the distance whatever the column's units or offset (float32 of the raw value loses a small spread on a
large level: a gauge of 64 GB that moves by a few kB). A distance beyond float16's reach widens its column's unit by a
power of two rather than being clipped."""

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
