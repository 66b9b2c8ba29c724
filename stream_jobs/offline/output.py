"""Writing `reveal detect --output FILE`: one row per window, as CSV or (for names ending in .jsonl) JSON lines.

Columns: host, window_start, window_end (ISO-8601 UTC, milliseconds), the per-detector `score_<detector>`
columns in the order of the first row, then score, flagged (0/1), detectors, subsystem, claim, ranked_metrics
(lists joined with ';'). Non-finite scores are written empty (CSV) or null (JSON). The path "-" is stdout.
"""

from __future__ import annotations

import csv
import json
import math
import sys
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Iterator

import numpy as np

LEADING_COLUMNS = ("host", "window_start", "window_end")
TRAILING_COLUMNS = ("score", "flagged", "detectors", "subsystem", "claim", "ranked_metrics")
REQUIRED_KEYS = ("host", "window_start", "window_end", "score", "flagged")
LIST_SEPARATOR = ";"
SCORE_PREFIX = "score_"


def write_windows(path: str | Path, rows: list[dict]) -> None:
    """Write window rows; window_start/window_end are int epoch ns or aware datetimes, lists are joined by ';'."""
    columns = window_columns(rows)
    cells = [_cells(number, row, columns) for number, row in enumerate(rows, start=1)]
    with _opened(path) as handle:
        if str(path).lower().endswith(".jsonl"):
            _write_json_lines(handle, columns, cells)
        else:
            _write_csv(handle, columns, cells)


def window_columns(rows: list[dict]) -> tuple[str, ...]:
    """The output columns: fixed ones around the first row's score_<detector> keys, in that row's order."""
    detector_scores = tuple(k for k in rows[0] if k.startswith(SCORE_PREFIX)) if rows else ()
    return LEADING_COLUMNS + detector_scores + TRAILING_COLUMNS


def format_time_ns(timestamp_ns: int) -> str:
    """Epoch nanoseconds as ISO-8601 UTC with milliseconds.

    >>> format_time_ns(1_700_000_000_123_456_789)
    '2023-11-14T22:13:20.123Z'
    """
    return f"{np.datetime_as_string(np.datetime64(int(timestamp_ns), 'ns'), unit='ms')}Z"


def _cells(number: int, row: dict, columns: tuple[str, ...]) -> list:
    """One row's values in column order, as the writers expect them."""
    missing = [key for key in REQUIRED_KEYS if key not in row]
    if missing:
        raise ValueError(f"window row {number} lacks {', '.join(missing)}")
    unknown = [k for k in row if k.startswith(SCORE_PREFIX) and k not in columns]
    if unknown:
        raise ValueError(f"window row {number} has {unknown[0]!r}, a score column the first row lacks")
    return [_cell(column, row.get(column)) for column in columns]


def _cell(column: str, value):
    if column in ("window_start", "window_end"):
        return _window_time(value)
    if column == "score" or column.startswith(SCORE_PREFIX):
        return finite_or_none(value)
    if column == "flagged":
        return int(bool(value))
    if column in ("detectors", "ranked_metrics") and not isinstance(value, str):
        return LIST_SEPARATOR.join(str(item) for item in value or ())
    return "" if value is None else str(value)


def _window_time(value) -> str:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"window time {value!r} has no timezone; pass epoch ns or an aware datetime")
        return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    return format_time_ns(value)


def finite_or_none(value) -> float | None:
    """A number for JSON or CSV: NaN, infinities and absent values become None."""
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _write_csv(handle: IO[str], columns: tuple[str, ...], cells: list[list]) -> None:
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([["" if cell is None else cell for cell in row] for row in cells])


def _write_json_lines(handle: IO[str], columns: tuple[str, ...], cells: list[list]) -> None:
    for row in cells:
        handle.write(json.dumps(dict(zip(columns, row)), ensure_ascii=False) + "\n")


@contextmanager
def _opened(path: str | Path) -> Iterator[IO[str]]:
    if str(path) == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    with open(path, "w", encoding="utf-8", newline="") as handle:
        yield handle
