"""CSV and Parquet inputs: a timestamp column, an optional host column, and numeric metric columns (gauges)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pa_parquet

from stream_jobs.offline.host_tables import (RecordedTable, TableError, empty_repairs, gauge_channels,
                                             repaired_host)
from stream_jobs.offline.timestamps import timestamps_ns

TIMESTAMP_COLUMN = "timestamp"
HOST_COLUMN = "host"
DEFAULT_HOST = "input"
DEFAULT_CLUSTER = "offline"
MISSING_TEXT = ("", "nan", "-nan", "na", "n/a", "null", "none")


def load_csv(path: str) -> RecordedTable:
    """A CSV file (optionally gzip-compressed), typed by pyarrow's multithreaded reader."""
    names = _csv_header(path)
    _check_columns(path, names)
    text_columns = {TIMESTAMP_COLUMN: pa.string(), HOST_COLUMN: pa.string()}
    try:
        table = _read_csv(path, text_columns | dict.fromkeys(_metric_names(names), pa.float64()))
    except pa.ArrowInvalid:
        table = _read_csv(path, dict.fromkeys(names, pa.string()))  # finds the cell that is not a number
    return table_from_frame(path, table.to_pandas())


def load_parquet(path: str) -> RecordedTable:
    try:
        frame = pa_parquet.read_table(path).to_pandas()
    except (pa.ArrowException, OSError) as error:
        raise TableError(f"{path}: not a readable Parquet file ({error})") from error
    frame.columns = [str(c) for c in frame.columns]
    _check_columns(path, list(frame.columns))
    return table_from_frame(path, frame)


def _csv_header(path: str) -> list[str]:
    _refuse_binary(path)
    try:
        with pa_csv.open_csv(path) as reader:
            return reader.schema.names
    except pa.ArrowInvalid as error:
        if "Empty CSV file" in str(error):
            raise TableError(f"{path}: the file has no rows") from error
        raise TableError(f"{path}: {error}") from error
    except UnicodeDecodeError as error:
        raise TableError(f"{path}: the header is not UTF-8 text (byte {error.start})") from error
    except OSError as error:
        raise TableError(f"{path}: cannot be read ({error})") from error


def _refuse_binary(path: str) -> None:
    """A file with NUL bytes near its start is not text: told in one line, without echoing its bytes."""
    import gzip

    opener = gzip.open if path.lower().endswith(".gz") else open
    try:
        with opener(path, "rb") as handle:
            head = handle.read(8192)
    except (OSError, EOFError) as error:
        raise TableError(f"{path}: cannot be read ({error})") from error
    if b"\0" in head:
        raise TableError(f"{path}: not a CSV text file (it holds binary data); expected a header line such as "
                         f"'{TIMESTAMP_COLUMN},metric_a,metric_b' and one row per instant")


def _read_csv(path: str, column_types: dict) -> pa.Table:
    try:
        return pa_csv.read_csv(path, convert_options=pa_csv.ConvertOptions(column_types=column_types,
                                                                           strings_can_be_null=True))
    except pa.ArrowInvalid as error:
        if "conversion error" in str(error):
            raise
        raise TableError(f"{path}: {error}") from error
    except UnicodeDecodeError as error:
        raise TableError(f"{path}: not UTF-8 text (byte {error.start} of a block)") from error


def _check_columns(path: str, names: list[str]) -> None:
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise TableError(f"{path}: column {repeated[0]!r} appears more than once")
    if TIMESTAMP_COLUMN not in names:
        raise TableError(f"{path}: no {TIMESTAMP_COLUMN!r} column (columns: {', '.join(names)})")
    if not _metric_names(names):
        raise TableError(f"{path}: no metric columns besides {TIMESTAMP_COLUMN!r} and {HOST_COLUMN!r}")


def _metric_names(names: list[str]) -> list[str]:
    return [n for n in names if n not in (TIMESTAMP_COLUMN, HOST_COLUMN)]


def table_from_frame(path: str, frame: pd.DataFrame) -> RecordedTable:
    """Per-host tables from a data frame whose columns have been checked."""
    if frame.empty:
        raise TableError(f"{path}: the file has no rows")
    names = _metric_names(list(frame.columns))
    values = _metric_values(path, frame, names)
    timestamps = timestamps_ns(path, frame[TIMESTAMP_COLUMN])
    host_codes, hosts = _host_codes(path, frame)
    channels, repairs = gauge_channels(names), empty_repairs()
    rows_by_host = np.split(np.argsort(host_codes, kind="stable"), np.cumsum(np.bincount(host_codes))[:-1])
    tables = [repaired_host(host, DEFAULT_CLUSTER, channels, timestamps[rows], values[rows], repairs)
              for host, rows in zip(hosts, rows_by_host)]
    return RecordedTable(path, {t.host: t for t in tables}, dict(repairs))


def _metric_values(path: str, frame: pd.DataFrame, names: list[str]) -> np.ndarray:
    values = np.empty((len(frame), len(names)), dtype=np.float64)
    for index, name in enumerate(names):
        values[:, index] = _numbers(path, name, frame[name])
    return values


def _numbers(path: str, name: str, column: pd.Series) -> np.ndarray:
    """A metric column as float64, empty cells NaN; TableError naming the first cell that is not a number."""
    if pd.api.types.is_bool_dtype(column) or pd.api.types.is_numeric_dtype(column):
        return column.to_numpy(dtype=np.float64, na_value=np.nan)
    if pd.api.types.is_datetime64_any_dtype(column) or pd.api.types.is_timedelta64_dtype(column):
        raise TableError(f"{path}: column {name!r} holds {column.dtype} values, not numbers")
    text = column.astype(object).where(column.notna(), None)
    numbers = pd.to_numeric(text, errors="coerce")
    blank = text.isna() | text.astype(str).str.strip().str.lower().isin(MISSING_TEXT)
    unreadable = (numbers.isna() & ~blank).to_numpy(dtype=bool)
    if unreadable.any():
        row = int(np.argmax(unreadable))
        raise TableError(f"{path}: column {name!r} row {row + 1}: {str(text.iloc[row])!r} is not a number")
    return numbers.to_numpy(dtype=np.float64, na_value=np.nan)


def _host_codes(path: str, frame: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """Each row's host as a code into the hosts in order of first appearance."""
    if HOST_COLUMN not in frame.columns:
        return np.zeros(len(frame), dtype=np.int64), [DEFAULT_HOST]
    hosts = frame[HOST_COLUMN].astype(object).where(frame[HOST_COLUMN].notna(), None)
    empty = (hosts.isna() | (hosts.astype(str).str.strip() == "")).to_numpy(dtype=bool)
    if empty.any():
        raise TableError(f"{path}: column {HOST_COLUMN!r} row {int(np.argmax(empty)) + 1}: the host is empty")
    codes, uniques = pd.factorize(hosts.astype(str))
    return codes.astype(np.int64), [str(h) for h in uniques]
