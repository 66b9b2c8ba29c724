"""Per-host sliding windows over frames: W seconds every S seconds, aligned to multiples of S since the epoch.

Alignment to the epoch makes a window's id (its end divided by the stride) the same in live and replayed runs. A
window opens with the last frame before its start, so its steps span the whole window: a counter a collector reads
once a second moves W/S times in every window, whatever the phase of its reads against the window's edges (without
that frame, one phase in ten would see a 3 s window move twice and read a third below its rate).
Frames must arrive in time order per host; late and duplicate frames are dropped and counted, never fatal.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np


def windows_for(seconds: float, stride_s: float) -> int:
    """How many windows at `stride_s` a duration of `seconds` takes (at least one): the one conversion of the engine's
    durations, all in seconds, to window counts.

    >>> windows_for(4.0, 1.0), windows_for(4.0, 0.5), windows_for(4.0, 3.0), windows_for(0.0, 1.0)
    (4, 8, 2, 1)
    """
    return max(1, math.ceil(seconds / stride_s - 1e-9))


@dataclass(frozen=True)
class Window:
    """The frames of one host that fall in [start_ns, end_ns), after the last frame before start_ns when there is
    one (the window's opening frame)."""

    window_id: int
    start_ns: int
    end_ns: int
    timestamps_ns: np.ndarray
    values: np.ndarray


@dataclass
class WindowCounters:
    frames: int = 0
    late: int = 0
    duplicate: int = 0
    sparse_windows: int = 0
    emitted: int = 0


class WindowAssembler:
    """Buffers one host's frames and emits each window once the first frame at or after its end arrives."""

    def __init__(self, window_s: float = 3.0, stride_s: float = 1.0, interval_s: float = 0.1,
                 min_coverage: float = 0.5):
        if window_s <= 0 or stride_s <= 0 or stride_s > window_s:
            raise ValueError(f"window {window_s} s and stride {stride_s} s must satisfy 0 < stride ≤ window")
        self.window_ns = round(window_s * 1e9)
        self.stride_ns = round(stride_s * 1e9)
        self.min_frames = max(2, int(min_coverage * window_s / interval_s))
        self.counters = WindowCounters()
        self._frames: deque[tuple[int, np.ndarray]] = deque()
        self._next_end: int | None = None
        self._last_ts: int | None = None
        self._last_cut_from_ns: int | None = None  # the first frame of the last window cut, its opening one

    def push(self, timestamp_ns: int, values: np.ndarray) -> list[Window]:
        """Add one frame; returns the windows it completes (usually none or one)."""
        if self._last_ts is not None and timestamp_ns <= self._last_ts:
            self.counters.duplicate += timestamp_ns == self._last_ts
            self.counters.late += timestamp_ns < self._last_ts
            return []
        if self._next_end is None:
            self._next_end = self._first_end(timestamp_ns)
        windows = []
        while timestamp_ns >= self._next_end:
            window = self._cut(self._next_end)
            if window is not None:
                windows.append(window)
            self._next_end += self.stride_ns
        self._drop_before(self._next_end - self.window_ns)  # what the next window does not span
        self._frames.append((timestamp_ns, values))
        self._last_ts = timestamp_ns
        self.counters.frames += 1
        return windows

    def needed_since_ns(self) -> int | None:
        """The oldest frame a resumed assembler needs: the one that opens the window before the next (one stride
        earlier than the next's start). Resumed from it, it cuts that window again from the same frames and every
        later one as an assembler that never stopped, also when frames fall on the stride."""
        if self._next_end is None:
            return None
        since = self._next_end - self.window_ns - self.stride_ns
        oldest = self._last_cut_from_ns if self._last_cut_from_ns is not None else \
            self._frames[0][0] if self._frames else since
        return min(since, oldest)

    def _first_end(self, timestamp_ns: int) -> int:
        """The first window end whose whole window lies after the first frame."""
        first_full_end = timestamp_ns + self.window_ns
        return -(-first_full_end // self.stride_ns) * self.stride_ns

    def _drop_before(self, start_ns: int) -> None:
        """Drop the frames before `start_ns` but the last of them, which opens the window starting there."""
        while len(self._frames) > 1 and self._frames[1][0] < start_ns:
            self._frames.popleft()

    def _cut(self, end_ns: int) -> Window | None:
        start_ns = end_ns - self.window_ns
        self._drop_before(start_ns)
        self._last_cut_from_ns = self._frames[0][0] if self._frames else None
        opening = int(bool(self._frames) and self._frames[0][0] < start_ns)
        if len(self._frames) - opening < self.min_frames:
            self.counters.sparse_windows += 1
            return None
        self.counters.emitted += 1
        timestamps = np.fromiter((t for t, _ in self._frames), dtype=np.int64, count=len(self._frames))
        values = np.vstack([v for _, v in self._frames])
        return Window(end_ns // self.stride_ns, start_ns, end_ns, timestamps, values)
