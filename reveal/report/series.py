"""Pure helpers that shape stored rows into what the charts draw: merged intervals, counter rates, axis scales."""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

from stream_jobs.engine.channels import CUMULATIVE_KINDS
from stream_jobs.engine.derived import counter_deltas

MAX_POINTS = 600


def bucket_ns(start_ns: int, end_ns: int, max_points: int = MAX_POINTS) -> int:
    """The width of one time bucket so that a span holds at most `max_points` buckets (+1 at the edge).

    >>> bucket_ns(0, 60_000_000_000, 600)
    100000000
    """
    return max(1, math.ceil((end_ns - start_ns) / max_points))


def merge_intervals(intervals: Iterable[tuple[int, int]], gap_ns: int = 0) -> list[tuple[int, int]]:
    """Sorted, overlapping or touching (within `gap_ns`) intervals merged into one.

    >>> merge_intervals([(5, 8), (0, 3), (2, 4), (20, 22)], gap_ns=1)
    [(0, 8), (20, 22)]
    """
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1] + gap_ns:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def is_cumulative(kind: str) -> bool:
    """True for counters whose rate, not level, is what a trace should show."""
    return kind in CUMULATIVE_KINDS


def counter_rates(times_ns: Sequence[int], values: Sequence[float]) -> tuple[list[int], list[float]]:
    """Per-second rates between successive samples of a cumulative counter, safe across wraps and resets.

    >>> counter_rates([0, 10**9, 2 * 10**9], [100.0, 150.0, 250.0])
    ([1000000000, 2000000000], [50.0, 100.0])
    """
    if len(values) < 2:
        return [], []
    seconds = np.diff(np.asarray(times_ns, dtype=np.int64)).astype(np.float64) / 1e9
    deltas = counter_deltas(np.asarray(values, dtype=np.float64)[:, None])[:, 0]
    rates = np.divide(deltas, seconds, out=np.full_like(deltas, np.nan), where=seconds > 0)
    return list(times_ns[1:]), rates.tolist()


def wants_log_scale(values: Iterable[float], dynamic_range: float = 100.0) -> bool:
    """True when positive values span more than `dynamic_range`× (a detector score that jumps by decades).

    >>> wants_log_scale([0.5, 1.0, 400.0]), wants_log_scale([0.0, 1.0, 400.0]), wants_log_scale([1.0, 5.0])
    (True, False, False)
    """
    finite = [v for v in values if math.isfinite(v)]
    if not finite or min(finite) <= 0:
        return False
    return max(finite) / min(finite) > dynamic_range
