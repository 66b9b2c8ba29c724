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


def run_schedule(interval: float, on_tick: Callable[[int, float], None], should_stop: Callable[[], bool],
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 stats: TickStats | None = None) -> TickStats:
    """Call on_tick(k, due_time) at each due time until should_stop(); never drifts, skips ticks it is late for."""
    stats = stats or TickStats()
    start = clock()
    tick = -1
    while not should_stop():
        tick = next_tick(start, interval, clock(), tick)
        due = start + tick * interval
        delay = due - clock()
        if delay > 0:
            sleep(delay)
        lag = max(0.0, clock() - due)
        stats.skipped = tick - stats.ticks
        stats.ticks += 1
        stats.last_lag_s, stats.max_lag_s = lag, max(stats.max_lag_s, lag)
        stats.lags.append(lag)
        on_tick(tick, due)
    return stats
