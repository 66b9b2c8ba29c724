"""Loading a recorded table for `reveal detect --input FILE`: CSV, Parquet or the agent's Avro recording.

CSV and Parquet files hold a `timestamp` column (epoch s/ms/µs/ns by magnitude, or ISO-8601; naive means UTC),
an optional `host` column and numeric metric columns, all treated as gauges. A recording brings its catalogs.
Safe repairs are made and counted in `RecordedTable.repairs`; anything else raises TableError.
"""

from __future__ import annotations

from pathlib import Path

from schemas.channels import subsystem_for
from stream_jobs.offline.column_files import load_csv, load_parquet
from stream_jobs.offline.host_tables import REPAIR_KINDS, HostTable, RecordedTable, TableChannels, TableError
from stream_jobs.offline.recordings import load_recording

LOADERS = ((".csv", load_csv), (".csv.gz", load_csv), (".parquet", load_parquet), (".pq", load_parquet),
           (".avro", load_recording))

__all__ = ["REPAIR_KINDS", "HostTable", "RecordedTable", "TableChannels", "TableError", "load_table"]


def load_table(path: str | Path) -> RecordedTable:
    """Every host's sorted, de-duplicated rows from a .csv, .csv.gz, .parquet, .pq or .avro file."""
    name = str(path)
    loader = next((load for suffix, load in LOADERS if name.lower().endswith(suffix)), None)
    if loader is None:
        suffixes = ", ".join(suffix for suffix, _ in LOADERS)
        raise TableError(f"{name}: unsupported input format; expected a file ending in {suffixes}")
    if not Path(path).is_file():
        raise TableError(f"{name}: no such file")
    return loader(name)
