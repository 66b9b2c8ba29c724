"""Agent recordings (Avro) as per-host tables, aligned to each host's last catalog."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np

from producers.recording import read_recording
from schemas.records import Catalog, Frame
from stream_jobs.offline.host_tables import (HostTable, RecordedTable, TableChannels, TableError, empty_repairs,
                                             repaired_host)


@dataclass
class _HostRecords:
    """One host's catalogs by version (the last recorded one last) and its frames in file order."""

    catalogs: dict[int, Catalog] = field(default_factory=dict)
    frames: list[tuple[int, Frame]] = field(default_factory=list)


def load_recording(path: str) -> RecordedTable:
    """Every host with frames in the recording; frames of earlier catalogs are aligned by channel name."""
    records = _records_by_host(path)
    repairs = empty_repairs()
    tables = [_host_table(path, host, held, repairs) for host, held in records.items() if held.frames]
    if not tables:
        raise TableError(f"{path}: the file has no rows")
    return RecordedTable(path, {t.host: t for t in tables}, dict(repairs))


def _records_by_host(path: str) -> dict[str, _HostRecords]:
    records: dict[str, _HostRecords] = defaultdict(_HostRecords)
    number = 0
    try:
        for number, item in enumerate(read_recording(path), start=1):
            if isinstance(item, Catalog):
                records[item.host].catalogs.pop(item.version, None)
                records[item.host].catalogs[item.version] = item
            else:
                records[item.host].frames.append((number, item))
    except (ValueError, EOFError, KeyError, TypeError) as error:
        raise TableError(f"{path}: record {number + 1}: not a readable agent recording ({error})") from error
    except OSError as error:
        raise TableError(f"{path}: cannot be read ({error})") from error
    return records


def _host_table(path: str, host: str, held: _HostRecords, repairs: Counter) -> HostTable:
    if not held.catalogs:
        raise TableError(f"{path}: host {host!r} has frames but the recording holds no catalog for it")
    last = list(held.catalogs.values())[-1]
    frames = [frame for _, frame in held.frames]
    versions = np.fromiter((frame.catalog_version for frame in frames), dtype=np.int64, count=len(frames))
    values = np.full((len(frames), len(last.names)), np.nan)
    for version in np.unique(versions):
        rows = np.flatnonzero(versions == version)
        catalog = _catalog_of(path, held, int(rows[0]))
        source, target = _shared_columns(catalog, last)
        values[np.ix_(rows, target)] = _stacked(path, held, rows, len(catalog.names))[:, source]
    timestamps = np.fromiter((frame.timestamp_ns for frame in frames), dtype=np.int64, count=len(frames))
    channels = TableChannels(last.names, last.kinds, tuple(c.subsystem for c in last.channels))
    return repaired_host(host, last.cluster, channels, timestamps, values, repairs, last.interval_s)


def _catalog_of(path: str, held: _HostRecords, index: int) -> Catalog:
    number, frame = held.frames[index]
    catalog = held.catalogs.get(frame.catalog_version)
    if catalog is None:
        raise TableError(f"{path}: record {number}: frame of {frame.host!r} names catalog version "
                         f"{frame.catalog_version}, which the recording does not hold")
    return catalog


def _shared_columns(catalog: Catalog, last: Catalog) -> tuple[np.ndarray, np.ndarray]:
    """Columns of `catalog` whose channel the last catalog also has, and where they go in the last one's order."""
    position = {name: index for index, name in enumerate(last.names)}
    source = [index for index, name in enumerate(catalog.names) if name in position]
    return np.asarray(source, dtype=np.int64), np.asarray([position[catalog.names[i]] for i in source],
                                                          dtype=np.int64)


def _stacked(path: str, held: _HostRecords, rows: np.ndarray, width: int) -> np.ndarray:
    """The values of the frames at `rows`, all of one catalog with `width` channels."""
    for index in rows:
        number, frame = held.frames[index]
        if len(frame.values) != width:
            raise TableError(f"{path}: record {number}: frame of {frame.host!r} has {len(frame.values)} values "
                             f"but its catalog has {width} channels")
    return np.vstack([held.frames[index][1].values for index in rows])
