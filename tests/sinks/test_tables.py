"""Reveal's table definitions read from tables.sql: each table's columns in DDL order less those storage fills,
rows built and selects written by column name, and every table described."""

import pytest

from sinks.tables import COLUMNS, FRAMES, TABLE_DESCRIPTIONS, TABLES, ColumnMismatch, read_tables

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
