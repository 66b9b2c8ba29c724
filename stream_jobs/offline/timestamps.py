"""A table's timestamp column as int64 epoch nanoseconds: epoch seconds, ms, µs or ns by magnitude, or ISO-8601."""

from __future__ import annotations

import numpy as np
import pandas as pd

from stream_jobs.offline.host_tables import TableError

# Epoch values below these magnitudes are seconds, milliseconds, microseconds; above them nanoseconds.
# Seconds stay below 1e11 until the year 5138, so the ranges cannot be confused for real clocks.
UNIT_LIMITS_NS = ((1e11, 10**9), (1e14, 10**6), (1e17, 10**3))
INT64_LIMIT = 2.0**63


def timestamps_ns(path: str, column: pd.Series) -> np.ndarray:
    """The column as int64 epoch nanoseconds; TableError naming the first row that is empty or unreadable."""
    if pd.api.types.is_datetime64_any_dtype(column):
        return _datetimes_ns(path, column, column)
    if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
        return _epoch_ns(path, column, column)
    text = column.astype(object).where(column.notna(), None)
    _reject_empty(path, text.isna() | (text.astype(str).str.strip() == ""))
    numbers = pd.to_numeric(text, errors="coerce")
    if not np.isnan(numbers.iloc[0]):
        return _epoch_ns(path, numbers, text)
    return _datetimes_ns(path, pd.to_datetime(text, utc=True, format="ISO8601", errors="coerce"), text)


def _reject_empty(path: str, empty: pd.Series) -> None:
    if empty.any():
        raise TableError(f"{path}: row {_first_row(empty)}: timestamp is empty")


def _epoch_ns(path: str, numbers: pd.Series, original: pd.Series) -> np.ndarray:
    """Epoch numbers in the unit their typical magnitude implies, scaled to nanoseconds."""
    _reject_empty(path, original.isna())
    _reject_unreadable(path, numbers.isna(), original)
    as_float = numbers.to_numpy(dtype=np.float64)
    scale = _scale_to_ns(float(np.median(np.abs(as_float))))
    _reject_unreadable(path, pd.Series(~(np.abs(as_float * scale) < INT64_LIMIT)), original)
    if pd.api.types.is_integer_dtype(numbers):
        return numbers.to_numpy(dtype=np.int64) * np.int64(scale)
    return _float_epoch_ns(as_float, scale)


def _scale_to_ns(magnitude: float) -> int:
    return next((scale for limit, scale in UNIT_LIMITS_NS if magnitude < limit), 1)


def _float_epoch_ns(epoch: np.ndarray, scale: int) -> np.ndarray:
    """Float epoch values as ns, to the nearest microsecond: float64 holds no finer digits of today's seconds."""
    if scale < 1000:
        return np.round(epoch * scale).astype(np.int64)
    whole = np.floor(epoch)
    fraction_us = np.round((epoch - whole) * (scale // 1000))
    return whole.astype(np.int64) * scale + fraction_us.astype(np.int64) * 1000


def _datetimes_ns(path: str, parsed: pd.Series, original: pd.Series) -> np.ndarray:
    """Datetimes as UTC nanoseconds; naive ones are taken to be UTC already."""
    _reject_empty(path, original.isna())
    _reject_unreadable(path, parsed.isna(), original)
    if parsed.dt.tz is not None:
        parsed = parsed.dt.tz_convert("UTC").dt.tz_localize(None)
    return parsed.to_numpy(dtype="datetime64[ns]").view(np.int64)


def _reject_unreadable(path: str, unreadable: pd.Series, original: pd.Series) -> None:
    if unreadable.any():
        row = _first_row(unreadable)
        raise TableError(f"{path}: row {row}: timestamp {str(original.iloc[row - 1])!r} "
                         f"is not epoch seconds or ISO-8601")


def _first_row(mask: pd.Series) -> int:
    """The 1-based data row of the first True, as a spreadsheet user counts rows below the header."""
    return int(np.argmax(mask.to_numpy(dtype=bool))) + 1
