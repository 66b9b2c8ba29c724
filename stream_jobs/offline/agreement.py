"""Window agreement between two detection runs (paper §5.5): length-based IoU and hit rates over merged intervals.

Intervals are (start, end) pairs in float seconds or int nanoseconds; overlapping or touching ones are merged
and empty ones (end == start) dropped first. Two empty sets agree fully (1.0); one empty set against a non-empty
one gives 0.0. A segment "hits" another set when it shares a positive length with it.
"""

from __future__ import annotations

import csv
import json
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd

Interval = tuple[float, float]
WINDOW_KEYS = ("host", "window_start", "window_end", "flagged")


@dataclass(frozen=True)
class Overlap:
    """Lengths, segment counts and hits of two merged interval sets, enough for every §5.5 measure."""

    length_a: float
    length_b: float
    length_both: float
    segments_a: int
    segments_b: int
    hits_a: int
    hits_b: int

    def __add__(self, other: "Overlap") -> "Overlap":
        return Overlap(*(mine + theirs for mine, theirs in zip(astuple(self), astuple(other))))

    def swapped(self) -> "Overlap":
        """The same overlap seen from B's side."""
        return Overlap(self.length_b, self.length_a, self.length_both, self.segments_b, self.segments_a,
                       self.hits_b, self.hits_a)

    @property
    def iou(self) -> float:
        union = self.length_a + self.length_b - self.length_both
        return float(self.length_both / union) if union > 0 else 1.0

    @property
    def hit_rate_by_count(self) -> float:
        return _ratio(self.hits_a, self.segments_a, b_is_empty=self.segments_b == 0)

    @property
    def hit_rate_by_length(self) -> float:
        return _ratio(self.length_both, self.length_a, b_is_empty=self.segments_b == 0)


NO_OVERLAP = Overlap(0, 0, 0, 0, 0, 0, 0)


def _ratio(part: float, whole: float, b_is_empty: bool) -> float:
    """part / whole; for an empty A, 1.0 when B is empty too and 0.0 otherwise."""
    if whole > 0:
        return float(part / whole)
    return 1.0 if b_is_empty else 0.0


def merge_intervals(intervals: Iterable[Sequence[float]]) -> list[Interval]:
    """Sorted disjoint intervals covering the same time; touching intervals join, empty ones vanish.

    >>> merge_intervals([(5, 7), (0, 2), (1, 3), (3, 4), (8, 8)])
    [(0, 4), (5, 7)]
    """
    merged: list[list] = []
    for start, end in sorted((s, e) for s, e in intervals):
        if end < start:
            raise ValueError(f"interval ({start}, {end}) ends before it starts")
        if end == start:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


def overlap(a: Iterable[Sequence[float]], b: Iterable[Sequence[float]]) -> Overlap:
    """How two interval sets overlap, after merging each."""
    merged_a, merged_b = merge_intervals(a), merge_intervals(b)
    return Overlap(_length(merged_a), _length(merged_b), _shared_length(merged_a, merged_b),
                   len(merged_a), len(merged_b), _hits(merged_a, merged_b), _hits(merged_b, merged_a))


def iou(a: Iterable[Sequence[float]], b: Iterable[Sequence[float]]) -> float:
    """L(A∩B) / (L(A) + L(B) − L(A∩B)) over merged intervals.

    >>> iou([(0, 4)], [(2, 6)])
    0.3333333333333333
    """
    return overlap(a, b).iou


def hit_rate_by_count(a: Iterable[Sequence[float]], b: Iterable[Sequence[float]]) -> float:
    """The fraction of A's merged segments that share some length with B.

    >>> hit_rate_by_count([(0, 1), (5, 6)], [(0.5, 2)])
    0.5
    """
    return overlap(a, b).hit_rate_by_count


def hit_rate_by_length(a: Iterable[Sequence[float]], b: Iterable[Sequence[float]]) -> float:
    """The fraction of A's merged length that B also covers.

    >>> hit_rate_by_length([(0, 4)], [(3, 10)])
    0.25
    """
    return overlap(a, b).hit_rate_by_length


def _length(merged: list[Interval]) -> float:
    return sum(end - start for start, end in merged)


def _shared_length(a: list[Interval], b: list[Interval]) -> float:
    """Total length of the intersection of two merged, sorted interval lists (one sweep)."""
    shared, i, j = 0, 0, 0
    while i < len(a) and j < len(b):
        shared += max(0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return shared


def _hits(a: list[Interval], b: list[Interval]) -> int:
    """How many segments of `a` share a positive length with some segment of `b` (both merged and sorted)."""
    hits, j = 0, 0
    for start, end in a:
        while j < len(b) and b[j][1] <= start:
            j += 1
        hits += j < len(b) and b[j][0] < end
    return hits


def read_windows(path: str | Path) -> list[dict]:
    """The rows of a file written by write_windows (CSV, or JSON lines for names ending in .jsonl)."""
    with open(path, encoding="utf-8", newline="") as handle:
        if str(path).lower().endswith(".jsonl"):
            return [json.loads(line) for line in handle if line.strip()]
        return list(csv.DictReader(handle))


def intervals_from_windows(rows: list[dict]) -> dict[str, list[tuple[int, int]]]:
    """Merged flagged intervals (int epoch ns) per host; hosts without flagged windows map to an empty list."""
    by_host: dict[str, list[tuple[int, int]]] = {}
    for number, row in enumerate(rows, start=1):
        missing = [key for key in WINDOW_KEYS if key not in row]
        if missing:
            raise ValueError(f"window row {number} lacks {', '.join(missing)}")
        spans = by_host.setdefault(str(row["host"]), [])
        if _flagged(number, row["flagged"]):
            spans.append((_time_ns(number, row["window_start"]), _time_ns(number, row["window_end"])))
    return {host: merge_intervals(spans) for host, spans in by_host.items()}


def _flagged(number: int, value) -> bool:
    text = str(value).strip().lower()
    if text in ("1", "true"):
        return True
    if text in ("0", "false", ""):
        return False
    raise ValueError(f"window row {number}: flagged is {value!r}, not 0 or 1")


def _time_ns(number: int, text) -> int:
    """An ISO-8601 time as epoch ns; a time without an offset is UTC."""
    try:
        stamp = pd.Timestamp(text)
    except (ValueError, TypeError) as error:
        raise ValueError(f"window row {number}: {text!r} is not an ISO-8601 time") from error
    if stamp is pd.NaT:
        raise ValueError(f"window row {number}: a window time is empty")
    return (stamp if stamp.tzinfo else stamp.tz_localize("UTC")).value


def compare_runs(path_a: str | Path, path_b: str | Path) -> dict:
    """§5.5 agreement of two window files: per host and pooled over hosts, hit rates both ways (A→B, B→A).

    Returns {"hosts": {host: measures}, "overall": measures, "hosts_only_in_a": [...], "hosts_only_in_b": [...]};
    measures are iou, hit_by_count_a_to_b, hit_by_count_b_to_a, hit_by_length_a_to_b, hit_by_length_b_to_a,
    segments_a, segments_b, seconds_a, seconds_b, seconds_both. A host missing from one file counts as unflagged.
    """
    runs_a = intervals_from_windows(read_windows(path_a))
    runs_b = intervals_from_windows(read_windows(path_b))
    hosts = list(runs_a) + [h for h in runs_b if h not in runs_a]
    per_host = {host: overlap(runs_a.get(host, []), runs_b.get(host, [])) for host in hosts}
    pooled = sum(per_host.values(), NO_OVERLAP)
    return {"hosts": {host: agreement_measures(o) for host, o in per_host.items()},
            "overall": agreement_measures(pooled),
            "hosts_only_in_a": [h for h in runs_a if h not in runs_b],
            "hosts_only_in_b": [h for h in runs_b if h not in runs_a]}


def agreement_measures(overlap_ns: Overlap) -> dict:
    """The §5.5 measures of one overlap of nanosecond intervals, lengths in seconds."""
    return {"iou": overlap_ns.iou,
            "hit_by_count_a_to_b": overlap_ns.hit_rate_by_count,
            "hit_by_count_b_to_a": overlap_ns.swapped().hit_rate_by_count,
            "hit_by_length_a_to_b": overlap_ns.hit_rate_by_length,
            "hit_by_length_b_to_a": overlap_ns.swapped().hit_rate_by_length,
            "segments_a": overlap_ns.segments_a, "segments_b": overlap_ns.segments_b,
            "seconds_a": overlap_ns.length_a / 1e9, "seconds_b": overlap_ns.length_b / 1e9,
            "seconds_both": overlap_ns.length_both / 1e9}
