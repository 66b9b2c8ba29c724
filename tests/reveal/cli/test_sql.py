"""`reveal sql`: read-only unless told to write, clear errors, its output formats, the tables it describes and a
channel read by name."""

import json
import re
import subprocess
import sys

import pytest

from sinks.clickhouse import ClickHouseWriter, data_dir_dsn


def reveal(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reveal.cli", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture
def data_dir(tmp_path):
    folder = tmp_path / "data"
    writer = ClickHouseWriter(data_dir_dsn(folder))
    writer.add("alerts", [["h:1", "h", "c", "open", 0, 10**9, 2.5, "cpu", "cpu.user rose", "", "anomaly"]])
    writer.close()
    return str(folder)


def test_sql_only_reads_unless_told_to_write(data_dir):
    dropped = reveal("sql", "--data-dir", data_dir, "DROP TABLE alerts")
    assert dropped.returncode == 2 and len(dropped.stderr.strip().splitlines()) == 1
    assert "--write" in dropped.stderr
    assert reveal("sql", "--data-dir", data_dir, "--format", "tsv", "SELECT count() FROM alerts").stdout \
        .splitlines()[1] == "1"
    assert reveal("sql", "--data-dir", data_dir, "--write", "TRUNCATE TABLE alerts").returncode == 0
    assert reveal("sql", "--data-dir", data_dir, "--format", "tsv", "SELECT count() FROM alerts").stdout \
        .splitlines()[1] == "0"


def test_sql_with_malformed_parameter_is_a_clear_error(tmp_path):
    result = reveal("sql", "--data-dir", str(tmp_path), "--param", "oops", "SELECT 1")
    assert result.returncode == 2 and "NAME=VALUE" in result.stderr


def test_sql_refuses_a_folder_without_reveal_data_and_creates_nothing(tmp_path):
    missing = tmp_path / "no" / "such" / "dir"
    result = reveal("sql", "--data-dir", str(missing), "SELECT 1")
    assert result.returncode == 2 and "no Reveal data" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not missing.exists()
    (tmp_path / "other" / "clickhouse").mkdir(parents=True)
    other = reveal("sql", "--data-dir", str(tmp_path / "other"), "SELECT 1")
    assert other.returncode == 2 and "not a Reveal data store" in other.stderr


def test_jsonl_is_valid_json_with_null_for_nan(data_dir):
    result = reveal("sql", "--data-dir", data_dir, "--format", "jsonl", "SELECT nan AS x, [1, inf] AS y, 2.5 AS z")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout, parse_constant=lambda c: pytest.fail(f"{c} is not JSON")) == \
        {"x": None, "y": [1, None], "z": 2.5}


def test_a_reader_that_stops_early_ends_the_output_quietly(data_dir):
    shell = subprocess.run(["bash", "-c", f"{sys.executable} -m reveal.cli sql --data-dir {data_dir} --format tsv "
                            "'SELECT number FROM numbers(200000)' | head -1; echo \"status ${PIPESTATUS[0]}\""],
                           capture_output=True, text=True, timeout=120)
    assert shell.stdout.splitlines() == ["number", "status 0"] and shell.stderr == ""


def test_the_tables_are_described_once_for_the_help_the_readme_and_the_database():
    from pathlib import Path

    from sinks.tables import COLUMNS, TABLE_DESCRIPTIONS, TABLES_SQL

    created = set(re.findall(r"CREATE TABLE IF NOT EXISTS \{db\}\.(\w+)", TABLES_SQL.read_text()))
    assert created == set(TABLE_DESCRIPTIONS) == set(COLUMNS)
    shown = reveal("sql", "--help").stdout
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    for table, text in TABLE_DESCRIPTIONS.items():
        assert re.search(rf"^  {table} +{re.escape(text.split()[0])}", shown, re.M), table
        assert ", ".join(COLUMNS[table][:2]) in shown and f"`{table}`" in readme, table
    assert "channel_values(name = 'cpu.user.all')" in shown and "channel_values(name = " in readme


def test_one_channel_is_read_by_name_through_the_view(data_dir):
    from schemas.records import Catalog, Channel, Frame
    from sinks.clickhouse import ClickHouseWriter, data_dir_dsn
    from sinks.landing import queue_catalog, queue_frame

    import numpy as np

    writer = ClickHouseWriter(data_dir_dsn(data_dir))
    catalog = Catalog("view-host", "c", (Channel("cpu.user.all", "cpu", "counter", "ticks", ""),
                                         Channel("mem.free", "memory", "gauge", "bytes", "")), version=3)
    queue_catalog(writer, catalog)
    for index in range(4):
        queue_frame(writer, Frame("view-host", "c", 10**18 + index * 10**8, index, 3, np.array([index, 7.0])))
    writer.close()
    result = reveal("sql", "--data-dir", data_dir, "--format", "tsv",
                    "SELECT value, unit FROM channel_values(name = {n:String}) ORDER BY ts", "--param",
                    "n=cpu.user.all")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["value\tunit", "0.0\tticks", "1.0\tticks", "2.0\tticks", "3.0\tticks"]


def test_a_channel_no_host_has_is_named_with_the_nearest_instead_of_no_rows(data_dir):
    from schemas.records import Catalog, Channel
    from sinks.landing import queue_catalog

    writer = ClickHouseWriter(data_dir_dsn(data_dir))
    queue_catalog(writer, Catalog("view-host", "c", (Channel("cpu.user.all", "cpu", "counter", "ticks", ""),), 1))
    writer.close()
    for query, params in ((["SELECT ts FROM channel_values(name = 'cpu.usr.all')"], []),
                          (["SELECT ts FROM channel_values(name = {n:String})"], ["--param", "n=cpu.usr.all"])):
        result = reveal("sql", "--data-dir", data_dir, *query, *params)
        assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "'cpu.usr.all'" in result.stderr and "cpu.user.all" in result.stderr


@pytest.mark.parametrize("query, told", [("   ", "the query is empty"), ("SELECT 1 FORMAT JSON;", "FORMAT JSON"),
                                         ("select 2 format TabSeparated", "--format")])
def test_an_empty_query_or_one_with_its_own_format_is_one_clear_line(data_dir, query, told):
    result = reveal("sql", "--data-dir", data_dir, query)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert told in result.stderr and "Native" not in result.stderr


def test_format_inside_a_string_is_data_not_a_clause(data_dir):
    result = reveal("sql", "--data-dir", data_dir, "--format", "tsv", "SELECT 'x FORMAT JSON' AS t")
    assert result.returncode == 0 and result.stdout.splitlines() == ["t", "x FORMAT JSON"], result.stderr
