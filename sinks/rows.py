"""Reveal's records as ClickHouse rows, in the column order of sinks/sql/tables.sql."""

from __future__ import annotations

from schemas.records import Alert, Anomaly, Catalog, Frame


def frame_row(frame: Frame) -> list:
    return [frame.host, frame.cluster, frame.timestamp_ns, frame.sequence, frame.catalog_version, frame.values.tolist()]


def catalog_row(catalog: Catalog) -> list:
    channels = catalog.channels
    return [catalog.host, catalog.cluster, catalog.version, catalog.interval_s, [c.name for c in channels],
            [c.subsystem for c in channels], [c.kind for c in channels], [c.unit for c in channels],
            [c.device for c in channels]]


def anomaly_row(anomaly: Anomaly) -> list:
    evidence = anomaly.evidence
    return [anomaly.host, anomaly.cluster, anomaly.window_id, anomaly.window_start_ns, anomaly.window_end_ns,
            list(anomaly.detectors), anomaly.score, anomaly.threshold, anomaly.subsystem, anomaly.claim,
            anomaly.explanation, anomaly.hint,
            [e.channel for e in evidence], [e.feature for e in evidence], [e.value for e in evidence],
            [e.baseline_mean for e in evidence], [e.baseline_std for e in evidence], [e.z for e in evidence]]


def alert_row(alert: Alert) -> list:
    return [alert.alert_id, alert.host, alert.cluster, alert.state, alert.start_ns, alert.end_ns, alert.severity,
            alert.subsystem, alert.summary, alert.hint, alert.kind]
