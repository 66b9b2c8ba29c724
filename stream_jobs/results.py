"""Hands a host stage's output to storage, shared by the embedded runner and the Faust worker."""

from __future__ import annotations

from schemas.records import Catalog, Frame
from sinks.clickhouse import ClickHouseWriter
from sinks.rows import alert_row, anomaly_row, catalog_row, frame_row
from stream_jobs.host_stage import StageOutput


def queue_catalog(writer: ClickHouseWriter, catalog: Catalog) -> None:
    writer.add("catalogs", [catalog_row(catalog)])


def queue_frame(writer: ClickHouseWriter, frame: Frame) -> None:
    writer.add("frames", [frame_row(frame)])


def queue_output(writer: ClickHouseWriter, output: StageOutput) -> None:
    if output.window_rows:
        writer.add("windows", output.window_rows)
    if output.anomalies:
        writer.add("anomalies", [anomaly_row(a) for a in output.anomalies])
    if output.alerts:
        writer.add("alerts", [alert_row(a) for a in output.alerts])
    if output.baseline_rows:
        writer.add("baselines", output.baseline_rows)


def queue_cluster_output(writer: ClickHouseWriter, output) -> None:
    """Peer and retransmission anomalies, their alerts, and every retransmission verdict."""
    if output.anomalies:
        writer.add("anomalies", [anomaly_row(a) for a in output.anomalies])
    if output.alerts:
        writer.add("alerts", [alert_row(a) for a in output.alerts])
    if output.retransmission_rows:
        writer.add("retransmissions", output.retransmission_rows)
