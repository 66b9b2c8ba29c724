"""A drift-free periodic schedule: tick k is due at start + k·interval, whatever each tick cost."""

from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable


def next_tick(start: float, interval: float, now: float, last_tick: int) -> int:
    """The next tick index to run: the one after last_tick, or later ones if the clock has passed them."""
    due_now = math.floor((now - start) / interval)
    return max(last_tick + 1, due_now)


@dataclass
class TickStats:
    """How well the schedule is kept: ticks run, ticks skipped because a tick overran, lateness of the last."""

    ticks: int = 0
    skipped: int = 0
    last_lag_s: float = 0.0
    max_lag_s: float = 0.0
    lags: deque = field(default_factory=lambda: deque(maxlen=36_000))  # the last hour at 10 Hz, for percentiles

    def note(self, tick: int, lag_s: float) -> None:
        """Tick `tick` ran lag_s late; the ticks between it and the last noted one were skipped."""
        self.skipped = tick - self.ticks
        self.ticks += 1
        self.last_lag_s, self.max_lag_s = lag_s, max(self.max_lag_s, lag_s)
        self.lags.append(lag_s)


def block_end(last_tick: int, block_ticks: int) -> int:
    """The end (exclusive) of the block of ticks after last_tick: blocks end on multiples of block_ticks.

    >>> block_end(0, 10), block_end(9, 10), block_end(12, 10)
    (10, 20, 20)
    """
    return (last_tick + 1) // block_ticks * block_ticks + block_ticks


def block_aligned_start(monotonic_ns: int, realtime_ns: int, interval_ns: int, block_ticks: int,
                        next_tick: int = 1) -> int:
    """A schedule start (CLOCK_MONOTONIC, tick k due at start + k·interval) at which the last tick of every block
    is due just after a whole multiple of the block's length since the epoch (CLOCK_REALTIME), and `next_tick` is
    due no sooner than one interval from now (a tick just read is never followed by one a hair later) and within a
    block after that. A worker's windows end on whole seconds: with blocks of a second, the frame that closes a
    window is the last of its block and leaves at once, instead of waiting a block for the next.

    >>> start = block_aligned_start(5_000_000_000, 1_700_000_000_300_000_000, 100_000_000, 10)
    >>> last_tick_wall = start + 9 * 100_000_000 + (1_700_000_000_300_000_000 - 5_000_000_000)
    >>> last_tick_wall % 1_000_000_000, 100_000_000 <= start + 100_000_000 - 5_000_000_000 < 1_100_000_000
    (1000000, True)
    """
    block_ns = interval_ns * block_ticks
    phase = (block_margin_ns(interval_ns) - (block_ticks - 1) * interval_ns - (realtime_ns - monotonic_ns)) % block_ns
    earliest = monotonic_ns - (next_tick - 1) * interval_ns
    return earliest + (phase - earliest) % block_ns


def block_margin_ns(interval_ns: int) -> int:
    """How long after the whole multiple a block's last tick is due: the two clocks are read one after the other,
    and a tick due a hair early would fall in the window before."""
    return min(1_000_000, interval_ns // 4)


def off_block_phase(due_realtime_ns: int, interval_ns: int, block_ticks: int) -> bool:
    """Whether a block's last tick, due at this wall-clock time, has left its place just after a whole multiple of
    the block's length: the wall clock was stepped since the schedule was aligned."""
    return (due_realtime_ns - block_margin_ns(interval_ns)) % (interval_ns * block_ticks) > interval_ns // 2


def run_schedule(interval: float, on_tick: Callable[[int, float], None], should_stop: Callable[[], bool],
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 stats: TickStats | None = None, start: float | None = None, last_tick: int = -1) -> TickStats:
    """Call on_tick(k, due_time) at each due time until should_stop(); never drifts, skips ticks it is late for.
    A schedule taken over from another keeps its start and goes on after its last tick."""
    stats = stats or TickStats()
    start = clock() if start is None else start
    tick = last_tick
    while not should_stop():
        tick = next_tick(start, interval, clock(), tick)
        due = start + tick * interval
        delay = due - clock()
        if delay > 0:
            sleep(delay)
        stats.note(tick, max(0.0, clock() - due))
        on_tick(tick, due)
    return stats
