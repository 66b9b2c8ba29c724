"""The windows a channel watch keeps to refresh its model from, each stored once, in float16 steps.

The watch refits every column's band from a history of windows in which the columns that departed are left out,
and adopts a column's new level from its recent windows, raw. Both are the same windows: each is kept once, with the
columns that departed in it as packed bits, so a host's twelve minutes of history and ten of recent windows cost one
copy of the values, not two.

Each window is kept as its step from the window before, in float16 units of each column's spread (half_precision.py),
taken from the row as kept, so an error does not carry on: a row comes back within 0.05 % of its step. A level shift
costs that share of the shift on the row that makes it (and that share of that on the next, which corrects it), not
on every row after it, as distances from a fixed centre would; the rows a new level is adopted from are as exact as
any.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from stream_jobs.engine.detectors.zscore import capped
from stream_jobs.engine.half_precision import column_units, widening

FLOAT64_MAX = np.finfo(np.float64).max


def steps_as_float64(coded: np.ndarray) -> np.ndarray:
    """Float16 steps as float64, unknown ones as 0, infinities as the largest float: np.nan_to_num's values."""
    return capped(coded.astype(np.float64), FLOAT64_MAX)


class KeptWindows:
    """The last `history_rows` windows for refits (departed columns as NaN) and, among them, the last
    `recent_rows` judged ones for adoption (as they were)."""

    def __init__(self, history_rows: int, recent_rows: int):
        self.history_rows, self.recent_rows = history_rows, recent_rows
        self._rows: deque[tuple[np.ndarray, np.ndarray | None]] = deque(maxlen=max(history_rows, recent_rows))
        self._judged = 0
        self._base: np.ndarray | None = None  # the oldest row's values (0 where unknown), float64
        self._unit: np.ndarray | None = None  # each column's unit, float32
        self._sum = np.zeros(0)  # the kept steps summed: the newest row is base + unit · sum

    def seed(self, baseline: np.ndarray) -> None:
        """Start from the baseline's rows: the last of them are the history, none of them recent; the spread of
        them all gives the units. Rows older than the history could hold are not kept even for a moment."""
        baseline = np.asarray(baseline, dtype=np.float64)
        self._rows.clear()
        self._base, self._judged = None, 0
        self._unit = column_units(baseline)[1] if len(baseline) else None
        for row in baseline[max(0, len(baseline) - self._rows.maxlen):]:
            self._keep(row, None)

    def remember(self, values: np.ndarray, departing: np.ndarray) -> None:
        """Keep one judged window and which of its columns departed."""
        departing = np.asarray(departing, dtype=bool)
        self._keep(np.asarray(values, dtype=np.float64), np.packbits(departing) if departing.any() else None)
        self._judged = min(self._judged + 1, len(self._rows))

    @property
    def history_count(self) -> int:
        return min(len(self._rows), self.history_rows)

    @property
    def recent_count(self) -> int:
        return min(self._judged, self.recent_rows)

    def history(self) -> np.ndarray:
        """The history, windows × columns in float64, NaN where a column departed."""
        history = self._decoded()[len(self._rows) - self.history_count:]
        rows = list(self._rows)[len(self._rows) - self.history_count:]
        for index, (_, departed) in enumerate(rows):
            if departed is not None:
                history[index, np.unpackbits(departed, count=history.shape[1]).astype(bool)] = np.nan
        return history

    def recent(self) -> np.ndarray:
        """The recent judged windows, windows × columns in float64, as they were."""
        return self._decoded()[len(self._rows) - self.recent_count:]

    def bytes_once_full(self, columns: int) -> int:
        """What the steps hold when every row is kept (the departure bits, a 32nd of that at most, aside)."""
        return self._rows.maxlen * columns * np.dtype(np.float16).itemsize

    def _keep(self, values: np.ndarray, departed: np.ndarray | None) -> None:
        if self._unit is None:
            self._unit = column_units(values[None, :])[1]
        if len(self._rows) == self._rows.maxlen:
            self._drop_oldest()
        if not self._rows:
            self._base, self._sum = np.nan_to_num(values), np.zeros(len(values))
            self._rows.append((np.where(np.isnan(values), np.nan, 0.0).astype(np.float16), departed))
            return
        steps = (values - (self._base + self._unit * self._sum)) / self._unit
        factor = widening(steps)
        if factor is not None:
            self._widen(factor)
            steps = (values - (self._base + self._unit * self._sum)) / self._unit
        coded = steps.astype(np.float16)
        self._sum += steps_as_float64(coded)
        self._rows.append((coded, departed))

    def _drop_oldest(self) -> None:
        """Forget the oldest row: the next one's values become the base its steps are counted from."""
        self._rows.popleft()
        if not self._rows:
            return
        second = steps_as_float64(self._rows[0][0])
        self._base = self._base + self._unit * second
        self._sum -= second
        self._rows[0] = (np.where(np.isnan(self._rows[0][0]), np.nan, 0.0).astype(np.float16), self._rows[0][1])

    def _widen(self, factor: np.ndarray) -> None:
        """Grow the units of the columns whose step float16 cannot reach, and code their kept steps in them."""
        self._unit = (self._unit * factor).astype(np.float32)
        self._rows = deque((((steps / factor).astype(np.float16), departed) for steps, departed in self._rows),
                           maxlen=self._rows.maxlen)
        self._sum = np.nansum(np.asarray([steps for steps, _ in self._rows], dtype=np.float64), axis=0)

    def _decoded(self) -> np.ndarray:
        """Every kept row's values, windows × columns in float64, NaN where a value was unknown."""
        if not self._rows:
            return np.zeros((0, 0 if self._unit is None else len(self._unit)))
        steps = np.asarray([steps for steps, _ in self._rows], dtype=np.float64)
        values = self._base + self._unit * np.cumsum(np.nan_to_num(steps), axis=0)
        values[np.isnan(steps)] = np.nan
        return values
