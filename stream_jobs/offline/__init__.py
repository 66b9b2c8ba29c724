"""Offline detection over recorded tables: loading inputs, writing window verdicts, comparing runs (paper §5.5)."""

__all__ = [
    "agreement", "column_files", "host_tables", "output", "planted", "recordings", "runner", "tables",
    "timestamps"
]
