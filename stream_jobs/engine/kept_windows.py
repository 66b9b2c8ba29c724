"""The windows a channel watch keeps to refresh its model from, each stored once.

The watch refits every column's band from a history of windows in which the columns that departed are left out,
and adopts a column's new level from its recent windows, raw. Both are the same windows: each is kept once, as
float32 values with the columns that departed in it as packed bits, so a host's twelve minutes of history and ten
of recent windows cost one copy of the values, not two.
"""

from __future__ import annotations

from collections import deque

import numpy as np


class KeptWindows:
    """The last `history_rows` windows for refits (departed columns as NaN) and, among them, the last
    `recent_rows` judged ones for adoption (as they were)."""

    def __init__(self, history_rows: int, recent_rows: int):
        self.history_rows, self.recent_rows = history_rows, recent_rows
        self._rows: deque[tuple[np.ndarray, np.ndarray | None]] = deque(maxlen=max(history_rows, recent_rows))
        self._judged = 0

    def seed(self, baseline: np.ndarray) -> None:
        """Start from the baseline's rows: part of the history, none of them recent."""
        self._rows.clear()
        self._judged = 0
        self._rows.extend((row, None) for row in np.asarray(baseline, dtype=np.float32))

    def remember(self, values: np.ndarray, departing: np.ndarray) -> None:
        """Keep one judged window and which of its columns departed."""
        departing = np.asarray(departing, dtype=bool)
        self._rows.append((np.asarray(values, dtype=np.float32), np.packbits(departing) if departing.any() else None))
        self._judged = min(self._judged + 1, len(self._rows))

    @property
    def history_count(self) -> int:
        return min(len(self._rows), self.history_rows)

    @property
    def recent_count(self) -> int:
        return min(self._judged, self.recent_rows)

    def history(self) -> np.ndarray:
        """The history, windows × columns in float64, NaN where a column departed."""
        rows = list(self._rows)[len(self._rows) - self.history_count:]
        history = np.asarray([values for values, _ in rows], dtype=np.float64)
        for index, (values, departed) in enumerate(rows):
            if departed is not None:
                history[index, np.unpackbits(departed, count=len(values)).astype(bool)] = np.nan
        return history

    def recent(self) -> np.ndarray:
        """The recent judged windows, windows × columns in float64, as they were."""
        rows = list(self._rows)[len(self._rows) - self.recent_count:]
        return np.asarray([values for values, _ in rows], dtype=np.float64)

    def bytes_once_full(self, columns: int) -> int:
        """What the values hold when every row is kept (the departure bits, a 32nd of that at most, aside)."""
        return self._rows.maxlen * columns * np.dtype(np.float32).itemsize
