"""What a loaded input holds per host, and the safe repairs every input format shares."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

import numpy as np

from schemas.channels import subsystem_for
from stream_jobs.engine.channels import ChannelTable

DEFAULT_INTERVAL_S = 0.1
REPAIR_KINDS = ("sorted_rows", "duplicate_rows", "empty_cells", "infinite_values")

# A column written as a raw cumulative counter (bytes sent since boot) rises in at least this share of its steps...
RAW_COUNTER_RISING_SHARE = 0.1
# ...and falls (a reset) in at most this share.
RAW_COUNTER_RESET_SHARE = 0.001


class TableError(ValueError):
    """An input that cannot become a table; the message names the file and, where known, the column and row."""


@dataclass(frozen=True)
class TableChannels(ChannelTable):
    """A loaded table's columns in value order; usable wherever the engine takes a ChannelTable."""


@dataclass(frozen=True, eq=False)
class HostTable:
    """One host's rows: sorted unique timestamps (int64 ns) and a float64 matrix, one column per channel."""

    host: str
    cluster: str
    channels: TableChannels
    timestamps_ns: np.ndarray
    values: np.ndarray
    interval_s: float


@dataclass(frozen=True, eq=False)
class RecordedTable:
    """Every host of one input file, in order of first appearance, and the repairs made while loading it."""

    path: str
    hosts: dict[str, HostTable]
    repairs: dict[str, int]


def gauge_channels(names: list[str]) -> TableChannels:
    """Channels for a table without a catalog: every column a gauge, subsystems read from the names."""
    return TableChannels(tuple(names), ("gauge",) * len(names), tuple(subsystem_for(n) for n in names))


def empty_repairs() -> Counter:
    return Counter(dict.fromkeys(REPAIR_KINDS, 0))


def repaired_host(host: str, cluster: str, channels: TableChannels, timestamps_ns: np.ndarray,
                  values: np.ndarray, repairs: Counter, interval_s: float | None = None) -> HostTable:
    """One host's rows in file order, with missing and infinite cells, order and duplicates repaired and counted."""
    values = np.array(values, dtype=np.float64)
    infinite = np.isinf(values)
    repairs["empty_cells"] += int(np.count_nonzero(np.isnan(values)))
    repairs["infinite_values"] += int(np.count_nonzero(infinite))
    values[infinite] = np.nan
    timestamps_ns, values = _sorted_unique(np.asarray(timestamps_ns, dtype=np.int64), values, repairs)
    return HostTable(host, cluster, channels, timestamps_ns, values,
                     interval_s if interval_s is not None else typical_interval_s(timestamps_ns))


def _sorted_unique(timestamps_ns: np.ndarray, values: np.ndarray, repairs: Counter):
    """Rows sorted by time (stable), keeping the first of rows that share a timestamp."""
    repairs["sorted_rows"] += int(np.count_nonzero(timestamps_ns[1:] < timestamps_ns[:-1]))
    order = np.argsort(timestamps_ns, kind="stable")
    timestamps_ns, values = timestamps_ns[order], values[order]
    first = np.concatenate(([True], timestamps_ns[1:] != timestamps_ns[:-1]))
    repairs["duplicate_rows"] += int(len(first) - np.count_nonzero(first))
    return timestamps_ns[first], values[first]


def typical_interval_s(timestamps_ns: np.ndarray) -> float:
    """The median spacing of sorted unique timestamps, or the agent's 100 ms when there are fewer than two."""
    if len(timestamps_ns) < 2:
        return DEFAULT_INTERVAL_S
    return float(np.median(np.diff(timestamps_ns))) / 1e9


def counters_as_rates(table: RecordedTable, baseline: RecordedTable | None = None
                      ) -> tuple[RecordedTable, RecordedTable | None, tuple[str, ...]]:
    """Tables without a catalog (every column a gauge) with their raw cumulative counters read as per-second rates,
    decided on the input and the baseline together so that both read a column alike; also the names of those
    columns. A counter's level only grows, so judged as a gauge every later window would lie above its baseline."""
    tables = [*table.hosts.values(), *(baseline.hosts.values() if baseline else ())]
    if not all(set(t.channels.kinds) == {"gauge"} for t in tables):
        return table, baseline, ()
    columns = np.logical_and.reduce([raw_counter_columns(t.values) for t in tables])
    if not columns.any():
        return table, baseline, ()
    names = tuple(np.asarray(tables[0].channels.names)[columns].tolist())
    converted = [replace(r, hosts={h: as_rates(t, columns) for h, t in r.hosts.items()}) if r else r
                 for r in (table, baseline)]
    return converted[0], converted[1], names


def raw_counter_columns(values: np.ndarray) -> np.ndarray:
    """Columns (of rows in time order) that never go negative, rise in at least RAW_COUNTER_RISING_SHARE of their
    steps and fall in at most RAW_COUNTER_RESET_SHARE of them: cumulative counters written raw.

    >>> raw_counter_columns(np.array([[0.0, 5.0], [10.0, 4.0], [25.0, 6.0], [40.0, 5.0]]))
    array([ True, False])
    """
    steps = np.diff(values, axis=0)
    counted = np.fmax(np.isfinite(steps).sum(axis=0), 1)
    with np.errstate(invalid="ignore"):
        rising, falling = (steps > 0).sum(axis=0), (steps < 0).sum(axis=0)
        never_negative = ~(values < 0).any(axis=0)
    return never_negative & (rising >= RAW_COUNTER_RISING_SHARE * counted) & (falling <= RAW_COUNTER_RESET_SHARE * counted)


def as_rates(table: HostTable, columns: np.ndarray) -> HostTable:
    """The host's table with `columns` read as per-second rates of change and marked as counters; the first row, and
    a row where a counter reset, read NaN."""
    values = table.values.copy()
    seconds = np.diff(table.timestamps_ns).astype(np.float64)[:, None] / 1e9
    with np.errstate(invalid="ignore"):
        rates = np.diff(values[:, columns], axis=0) / seconds
        rates[rates < 0] = np.nan
    values[:, columns] = np.vstack([np.full((1, int(columns.sum())), np.nan), rates])
    kinds = tuple("counter" if rate else kind for rate, kind in zip(columns, table.channels.kinds))
    return replace(table, channels=replace(table.channels, kinds=kinds), values=values)
