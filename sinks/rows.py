"""Reveal's records as ClickHouse rows, in the column order of sinks/sql/tables.sql."""

from __future__ import annotations

import struct

import numpy as np

from schemas.codec import unsigned_varint
from schemas.records import VALUE_DTYPE, Alert, Anomaly, Catalog, Frame

_FRAME_NUMBERS = struct.Struct("<qQI")  # ts as DateTime64(9) ticks, sequence, catalog_version


def frame_row(frame: Frame) -> list:
    return [frame.host, frame.cluster, frame.timestamp_ns, frame.sequence, frame.catalog_version, frame.values]


def frame_rows_binary(rows: list[list]) -> bytes:
    """Frame rows in ClickHouse's RowBinary format: the values go in as their raw float64 bytes, so a 700-channel
    frame is never turned into 700 Python floats on its way to storage."""
    return b"".join(_frame_row_binary(*row) for row in rows)


def _frame_row_binary(host: str, cluster: str, timestamp_ns: int, sequence: int, catalog_version: int,
                      values) -> bytes:
    packed = np.ascontiguousarray(values, dtype=VALUE_DTYPE)
    return b"".join((_string(host), _string(cluster), _FRAME_NUMBERS.pack(timestamp_ns, sequence, catalog_version),
                     unsigned_varint(packed.size), packed.tobytes()))


def _string(text: str) -> bytes:
    encoded = text.encode("utf-8")
    return unsigned_varint(len(encoded)) + encoded


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
