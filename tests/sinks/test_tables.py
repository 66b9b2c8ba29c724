import inspect

import numpy as np
import pytest

from schemas.records import Alert, Anomaly, Evidence, Frame
from sinks import rows
from sinks.rows import alert_from_columns, alert_row, anomaly_from_columns, anomaly_row, frame_row
from sinks.tables import (ALERTS, ANOMALIES, COLUMNS, FRAMES, TABLE_DESCRIPTIONS, TABLES, ColumnMismatch,
                          read_tables)

DDL = """
CREATE TABLE IF NOT EXISTS {db}.samples
(
    host        LowCardinality(String),
    ts          DateTime64(9) CODEC(DoubleDelta, ZSTD(3)),
    saved_at    DateTime64(3),
    values      Array(Float64) CODEC(ZSTD(3)),
    flag        Bool DEFAULT true,
    stored_at   DateTime DEFAULT now(),
    seen_at     DateTime64(3) DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree
ORDER BY (host, ts);
"""


def test_a_rows_columns_are_the_ddls_in_order_less_those_the_storage_time_fills():
    samples = read_tables(DDL)["samples"]
    assert samples.columns == ("host", "ts", "saved_at", "values", "flag")
    assert samples.types["ts"] == "DateTime64(9) CODEC(DoubleDelta, ZSTD(3))"


def test_every_table_of_tables_sql_is_read_and_described():
    assert set(TABLES) == set(COLUMNS) == set(TABLE_DESCRIPTIONS)
    assert FRAMES.columns == ("host", "cluster", "ts", "sequence", "catalog_version", "values")
    assert "stored_at" not in TABLES["windows"].columns and "took_effect" in TABLES["lab_faults"].columns


def test_a_row_is_built_in_column_order_and_names_a_missing_or_unknown_column():
    samples = read_tables(DDL)["samples"]
    assert samples.row(flag=False, values=[1.0], saved_at=2, ts=1, host="h") == ["h", 1, 2, [1.0], False]
    with pytest.raises(ColumnMismatch, match="needs column flag"):
        samples.row(host="h", ts=1, saved_at=2, values=[])
    with pytest.raises(ColumnMismatch, match="has no column colour"):
        samples.row(host="h", ts=1, saved_at=2, values=[], flag=True, colour="red")


def test_a_select_reads_each_datetime64_back_as_the_ticks_a_row_writes():
    samples = read_tables(DDL)["samples"]
    assert samples.select() == ("host, toUnixTimestamp64Nano(ts), toUnixTimestamp64Milli(saved_at), values, flag")
    assert samples.select(("flag", "host")) == "flag, host"
    with pytest.raises(ColumnMismatch, match="has no column colour"):
        samples.select(("host", "colour"))


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
