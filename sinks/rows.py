"""Reveal's records as ClickHouse rows and back, each value named by its column in sinks/sql/tables.sql (the
order is the table's, from sinks.tables)."""

from __future__ import annotations

import struct
from typing import Mapping

import numpy as np

from schemas.varint import unsigned_varint
from schemas.records import VALUE_DTYPE, Alert, Anomaly, Catalog, Evidence, Frame
from sinks.tables import ALERTS, ANOMALIES, CATALOGS, FRAMES

_FRAME_NUMBERS = struct.Struct("<qQI")  # ts as DateTime64(9) ticks, sequence, catalog_version


# Where a record's field is not named as its column: the table's start and end are a record's *_ns.
_ALERT_FIELDS = {"start": "start_ns", "end": "end_ns"}
_ANOMALY_FIELDS = {"start": "window_start_ns", "end": "window_end_ns"}
# Evidence is stored as one array column per field, in Evidence's field order.
_EVIDENCE_COLUMNS = ("evidence_channel", "evidence_feature", "evidence_value", "evidence_baseline", "evidence_std",
                     "evidence_z")


def frame_row(frame: Frame) -> list:
    return FRAMES.row(host=frame.host, cluster=frame.cluster, ts=frame.timestamp_ns, sequence=frame.sequence,
                      catalog_version=frame.catalog_version, values=frame.values)


def frame_rows_binary(rows: list[list]) -> bytes:
    """Frame rows in ClickHouse's RowBinary format: the values go in as their raw float64 bytes, so a 700-channel
    frame is never turned into 700 Python floats on its way to storage."""
    return b"".join(_frame_row_binary(*row) for row in rows)


def _frame_row_binary(host: str, cluster: str, ts: int, sequence: int, catalog_version: int, values) -> bytes:
    """One frames row as RowBinary; its parameters are the table's columns, in order (a test holds them to it)."""
    packed = np.ascontiguousarray(values, dtype=VALUE_DTYPE)
    return b"".join((_string(host), _string(cluster), _FRAME_NUMBERS.pack(ts, sequence, catalog_version),
                     unsigned_varint(packed.size), packed.tobytes()))


def _string(text: str) -> bytes:
    encoded = text.encode("utf-8")
    return unsigned_varint(len(encoded)) + encoded


def catalog_row(catalog: Catalog) -> list:
    channels = catalog.channels
    return CATALOGS.row(host=catalog.host, cluster=catalog.cluster, version=catalog.version,
                        interval_s=catalog.interval_s, names=[c.name for c in channels],
                        subsystems=[c.subsystem for c in channels], kinds=[c.kind for c in channels],
                        units=[c.unit for c in channels], devices=[c.device for c in channels])


def anomaly_row(anomaly: Anomaly) -> list:
    evidence = anomaly.evidence
    return ANOMALIES.row(host=anomaly.host, cluster=anomaly.cluster, window_id=anomaly.window_id,
                         start=anomaly.window_start_ns, end=anomaly.window_end_ns, detectors=list(anomaly.detectors),
                         score=anomaly.score, threshold=anomaly.threshold, subsystem=anomaly.subsystem,
                         claim=anomaly.claim, explanation=anomaly.explanation, hint=anomaly.hint,
                         evidence_channel=[e.channel for e in evidence], evidence_feature=[e.feature for e in evidence],
                         evidence_value=[e.value for e in evidence],
                         evidence_baseline=[e.baseline_mean for e in evidence],
                         evidence_std=[e.baseline_std for e in evidence], evidence_z=[e.z for e in evidence])


def alert_row(alert: Alert) -> list:
    return ALERTS.row(alert_id=alert.alert_id, host=alert.host, cluster=alert.cluster, state=alert.state,
                      start=alert.start_ns, end=alert.end_ns, severity=alert.severity, subsystem=alert.subsystem,
                      summary=alert.summary, hint=alert.hint, kind=alert.kind)


def alert_from_columns(values: Mapping) -> Alert:
    """An Alert back from a row of alerts read as column → value (sinks.tables ALERTS.select())."""
    return Alert(**{_ALERT_FIELDS.get(column, column): value for column, value in values.items()})


def anomaly_from_columns(values: Mapping) -> Anomaly:
    """An Anomaly back from a row of anomalies read as column → value; its evidence is rebuilt when the evidence
    columns were read, and empty when they were not."""
    fields = {_ANOMALY_FIELDS.get(column, column): value for column, value in values.items()
              if column not in _EVIDENCE_COLUMNS}
    arrays = [values[column] for column in _EVIDENCE_COLUMNS if column in values]
    evidence = tuple(Evidence(*item) for item in zip(*arrays)) if len(arrays) == len(_EVIDENCE_COLUMNS) else ()
    return Anomaly(**{**fields, "detectors": tuple(fields["detectors"]), "evidence": evidence})
