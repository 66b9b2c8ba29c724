"""Lands the stages' output in ClickHouse as rows queued on a writer: shared by the embedded runner, the Faust
worker (through ClickHouseLanding, their ResultStore) and the lab's ingest."""

from __future__ import annotations

import json
from typing import Mapping

from schemas.records import Catalog, Frame
from sinks.clickhouse import ClickHouseWriter
from sinks.rows import alert_row, anomaly_row, catalog_row, frame_row
from stream_jobs.records import StageOutput

# The host's latest baseline of this catalog version, else its latest of any (which a restart can then say why it
# does not resume).
SAVED_BASELINE_SQL = ("SELECT state, catalog_version FROM baselines FINAL WHERE host = {host:String} "
                      "ORDER BY catalog_version = {version:UInt32} DESC, saved_at DESC LIMIT 1")

# Each incident of a host whose events hold no close: what a run that stopped without closing them (killed, crashed)
# left open.
UNCLOSED_INCIDENTS_SQL = """
SELECT alert_id, any(cluster), any(kind), argMax(subsystem, end), toUnixTimestamp64Nano(min(start)),
       toUnixTimestamp64Nano(max(end)), argMax(severity, end), argMax(summary, end), argMax(hint, end)
FROM alerts FINAL WHERE host = {host:String}
GROUP BY alert_id HAVING argMax(state, (end, state = 'closed')) != 'closed' ORDER BY alert_id"""
ABANDONED_NOTE = "closed when Reveal restarted: the run that opened it stopped without closing it"


def close_abandoned_incidents(writer: ClickHouseWriter, host: str) -> list[str]:
    """Close every incident of this host that a stopped run left open, at the last window it was seen in, with a
    note saying why, so no incident stays open for ever; returns their ids."""
    _, rows = writer.query(UNCLOSED_INCIDENTS_SQL, {"host": host})
    writer.add("alerts", [[alert_id, host, cluster, "closed", start, end, severity, subsystem,
                           f"{summary}; {ABANDONED_NOTE}", hint, kind]
                          for alert_id, cluster, kind, subsystem, start, end, severity, summary, hint in rows])
    writer.flush()
    return [row[0] for row in rows]


def queue_catalog(writer: ClickHouseWriter, catalog: Catalog) -> None:
    writer.add("catalogs", [catalog_row(catalog)])


def queue_frame(writer: ClickHouseWriter, frame: Frame) -> None:
    writer.add("frames", [frame_row(frame)])


def queue_output(writer: ClickHouseWriter, output: StageOutput) -> None:
    """A stage's windows, anomalies, alerts, baselines and retransmission verdicts."""
    if output.window_rows:
        writer.add("windows", output.window_rows)
    if output.anomalies:
        writer.add("anomalies", [anomaly_row(a) for a in output.anomalies])
    if output.alerts:
        writer.add("alerts", [alert_row(a) for a in output.alerts])
    if output.baseline_rows:
        writer.add("baselines", output.baseline_rows)
    if output.retransmission_rows:
        writer.add("retransmissions", output.retransmission_rows)


class ClickHouseLanding:
    """A ResultStore (stream_jobs/storage.py) over one ClickHouseWriter, whose StorageError is the
    StorageUnavailable the shells wait out."""

    def __init__(self, writer: ClickHouseWriter):
        self.writer = writer

    @property
    def max_pending_rows(self) -> int:
        return self.writer.max_pending_rows

    @property
    def rows_written(self) -> Mapping[str, int]:
        return self.writer.stats.rows

    def store_catalog(self, catalog: Catalog) -> None:
        queue_catalog(self.writer, catalog)

    def store_frame(self, frame: Frame) -> None:
        queue_frame(self.writer, frame)

    def store_output(self, output: StageOutput) -> None:
        queue_output(self.writer, output)

    def flush(self) -> int:
        return self.writer.flush()

    def pending_rows(self) -> int:
        return self.writer.pending_rows()

    def is_full(self) -> bool:
        return self.writer.is_full()

    def embedded_memory_bytes(self) -> int | None:
        return self.writer.embedded_memory_bytes()

    def saved_baseline(self, host: str, catalog_version: int) -> dict | None:
        """The latest baseline stored for this host and catalog, so a restarted worker does not learn it again;
        else the host's latest of another catalog, whose catalog_version says which."""
        _, rows = self.writer.query(SAVED_BASELINE_SQL, {"host": host, "version": catalog_version})
        return {**json.loads(rows[0][0]), "catalog_version": rows[0][1]} if rows else None

    def close(self) -> None:
        self.writer.close()


def open_landing(dsn: str, database: str = "reveal", max_pending_rows: int = 50_000) -> ClickHouseLanding:
    """A landing over a new writer (which creates the tables if they are missing)."""
    return ClickHouseLanding(ClickHouseWriter(dsn, database, max_pending_rows))
