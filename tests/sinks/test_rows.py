"""Records as ClickHouse rows and back: frames as RowBinary in the frames table's column order, and alerts and
anomalies read back from their columns as the records written."""

import inspect

import numpy as np

from schemas.records import Alert, Anomaly, Evidence, Frame
from sinks import rows
from sinks.rows import alert_from_columns, alert_row, anomaly_from_columns, anomaly_row, frame_row
from sinks.tables import ALERTS, ANOMALIES, FRAMES


def test_the_frames_row_binary_encoder_takes_the_frames_columns_in_order():
    assert tuple(inspect.signature(rows._frame_row_binary).parameters) == FRAMES.columns
    frame = Frame("h", "c", 7, 3, 1, np.array([1.5]))
    assert rows.frame_rows_binary([frame_row(frame)]) == rows._frame_row_binary("h", "c", 7, 3, 1, [1.5])


def test_an_alert_and_an_anomaly_read_back_as_the_records_written():
    alert = Alert("h:1", "h", "c", "open", 10, 20, 2.5, "cpu", "cpu.user rose", "look at cpu", "regime")
    assert alert_from_columns(dict(zip(ALERTS.columns, alert_row(alert)))) == alert
    anomaly = Anomaly("h", "c", 4, 10, 20, ("zscore",), 3.0, 1.0, "cpu", "cpu.user rose",
                      (Evidence("cpu.user.all", "mean", 90.0, 10.0, 2.0, 40.0),), "hot loop", "look at cpu")
    assert anomaly_from_columns(dict(zip(ANOMALIES.columns, anomaly_row(anomaly)))) == anomaly
    summary = ANOMALIES.columns[:ANOMALIES.columns.index("claim") + 1]
    read = anomaly_from_columns(dict(zip(summary, anomaly_row(anomaly))))
    assert read.evidence == () and read.claim == anomaly.claim and read.window_end_ns == 20
