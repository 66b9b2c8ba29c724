"""CSV and Parquet inputs: a timestamp column, an optional host column splitting rows by host, numeric metric columns
as gauges; a cell, column or file that cannot be read is named. Under hostile tables, every table either loads into
finite, sorted, de-duplicated hosts or is refused with TableError naming the file; NaN, Inf, negative counters, clock
jumps both ways, duplicate rows and hosts, and garbage cells never crash the loaders."""

import gzip
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from stream_jobs.offline.tables import TableError, load_table
from tests.stream_jobs.offline.table_files import T0_NS, T0_S, only_host, write_text


def test_csv_with_epoch_seconds_becomes_one_host_of_gauges(tmp_path):
    path = write_text(tmp_path, "input.csv", "timestamp,gpu.util.gpu0,fan\n"
                                             f"{T0_S},10,1.5\n{T0_S + 1},20,2.5\n{T0_S + 2},30,3.5\n")
    host = only_host(load_table(path))
    assert host.host == "input"
    assert host.timestamps_ns.dtype == np.int64
    assert host.timestamps_ns.tolist() == [T0_NS, T0_NS + 10**9, T0_NS + 2 * 10**9]
    assert host.values.dtype == np.float64 and host.values.tolist() == [[10, 1.5], [20, 2.5], [30, 3.5]]
    assert host.channels.names == ("gpu.util.gpu0", "fan")
    assert host.channels.kinds == ("gauge", "gauge")
    assert host.channels.subsystems == ("gpu", "other")
    assert host.interval_s == 1.0


def test_host_column_splits_rows_by_host_in_order_of_appearance(tmp_path):
    path = write_text(tmp_path, "input.csv", "timestamp,host,cpu.busy.cpu0\n"
                                             f"{T0_S},node-b,1\n{T0_S},node-a,10\n"
                                             f"{T0_S + 1},node-b,2\n{T0_S + 1},node-a,20\n")
    table = load_table(path)
    assert list(table.hosts) == ["node-b", "node-a"]
    assert table.hosts["node-a"].values[:, 0].tolist() == [10, 20]
    assert table.hosts["node-b"].values[:, 0].tolist() == [1, 2]
    assert table.hosts["node-a"].channels.names == ("cpu.busy.cpu0",)
    assert table.hosts["node-a"].channels.subsystems == ("cpu",)


def test_gzip_compressed_csv_loads(tmp_path):
    path = tmp_path / "input.csv.gz"
    path.write_bytes(gzip.compress(f"timestamp,a\n{T0_S},1\n{T0_S + 1},2\n".encode()))
    assert only_host(load_table(path)).values[:, 0].tolist() == [1, 2]


def test_parquet_round_trip(tmp_path):
    frame = pd.DataFrame({"timestamp": pd.to_datetime([T0_NS, T0_NS + 10**8, T0_NS + 2 * 10**8], utc=True),
                          "host": ["h1", "h2", "h1"], "net.rx_bytes.eth0": [1.0, 2.0, np.nan],
                          "disk.reads.sda": [4, 5, 6], "busy": [True, False, True]})
    frame.to_parquet(tmp_path / "input.parquet")
    table = load_table(tmp_path / "input.parquet")
    assert list(table.hosts) == ["h1", "h2"]
    h1 = table.hosts["h1"]
    assert h1.timestamps_ns.tolist() == [T0_NS, T0_NS + 2 * 10**8]
    assert h1.channels.subsystems == ("network", "storage", "other")
    np.testing.assert_array_equal(h1.values, [[1.0, 4.0, 1.0], [np.nan, 6.0, 1.0]])
    assert table.repairs["empty_cells"] == 1


def test_parquet_with_numeric_epoch_and_pq_suffix(tmp_path):
    pd.DataFrame({"timestamp": [T0_S * 1000, T0_S * 1000 + 100], "a": [1, 2]}).to_parquet(tmp_path / "x.pq")
    assert only_host(load_table(tmp_path / "x.pq")).timestamps_ns.tolist() == [T0_NS, T0_NS + 100_000_000]


def test_names_that_look_like_counters_are_still_gauges(tmp_path):
    path = write_text(tmp_path, "input.csv", f"timestamp,net.rx_bytes.eth0,vm.pgmajfault\n{T0_S},1,2\n")
    assert only_host(load_table(path)).channels.kinds == ("gauge", "gauge")


def test_text_in_a_metric_column_names_the_column_and_row(tmp_path):
    rows = "".join(f"{T0_S + i},{i}\n" for i in range(16)) + f"{T0_S + 16},abc\n"
    path = write_text(tmp_path, "input.csv", "timestamp,gpu_util\n" + rows)
    with pytest.raises(TableError) as raised:
        load_table(path)
    assert str(raised.value) == f"{path}: column 'gpu_util' row 17: 'abc' is not a number"


def test_text_deep_in_a_large_csv_is_found_after_numeric_rows(tmp_path):
    rows = "".join(f"{T0_S * 1000 + i},{i}.5,{i}\n" for i in range(200_000))
    path = write_text(tmp_path, "input.csv", "timestamp,a,b\n" + rows + f"{T0_S * 1000 + 200_000},1,n/a?\n")
    with pytest.raises(TableError, match=r"column 'b' row 200001: 'n/a\?' is not a number"):
        load_table(path)


def test_text_in_a_parquet_metric_column_names_the_column_and_row(tmp_path):
    pd.DataFrame({"timestamp": [T0_S, T0_S + 1, T0_S + 2], "load": ["1", "", "x1"]}).to_parquet(
        tmp_path / "input.parquet")
    with pytest.raises(TableError, match=r"input\.parquet: column 'load' row 3: 'x1' is not a number"):
        load_table(tmp_path / "input.parquet")


def test_missing_timestamp_column_lists_the_columns(tmp_path):
    path = write_text(tmp_path, "input.csv", "a,b,c\n1,2,3\n")
    with pytest.raises(TableError) as raised:
        load_table(path)
    assert str(raised.value) == f"{path}: no 'timestamp' column (columns: a, b, c)"


@pytest.mark.parametrize("text", ["", "timestamp,a\n"])
def test_a_file_without_rows_is_rejected(tmp_path, text):
    path = write_text(tmp_path, "input.csv", text)
    with pytest.raises(TableError) as raised:
        load_table(path)
    assert str(raised.value) == f"{path}: the file has no rows"


def test_a_parquet_file_without_rows_is_rejected(tmp_path):
    pd.DataFrame({"timestamp": pd.Series([], dtype="int64"), "a": pd.Series([], dtype="float64")}).to_parquet(
        tmp_path / "input.parquet")
    with pytest.raises(TableError, match=r"input\.parquet: the file has no rows$"):
        load_table(tmp_path / "input.parquet")


def test_an_empty_host_names_the_row(tmp_path):
    path = write_text(tmp_path, "input.csv", f"timestamp,host,a\n{T0_S},h1,1\n{T0_S},,2\n")
    with pytest.raises(TableError, match=r"column 'host' row 2: the host is empty"):
        load_table(path)


def test_a_table_without_metric_columns_is_rejected(tmp_path):
    path = write_text(tmp_path, "input.csv", f"timestamp,host\n{T0_S},h1\n")
    with pytest.raises(TableError, match="no metric columns"):
        load_table(path)


def test_a_repeated_column_is_rejected(tmp_path):
    path = write_text(tmp_path, "input.csv", f"timestamp,a,a\n{T0_S},1,2\n")
    with pytest.raises(TableError, match="column 'a' appears more than once"):
        load_table(path)


def test_a_row_with_too_many_cells_is_rejected(tmp_path):
    path = write_text(tmp_path, "input.csv", f"timestamp,a\n{T0_S},1\n{T0_S + 1},2,3\n")
    with pytest.raises(TableError, match=r"input\.csv: .*Expected 2 columns, got 3"):
        load_table(path)


# The loaders under hostile tables.

FUZZ = settings(max_examples=1_000, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
CELL = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**40), 2**40),
                 st.sampled_from(["", "nan", "inf", "-inf", "x", "1e400", " 3 ", "--1"]))
STEP = st.one_of(st.just(0.1), st.just(0.0), st.floats(-3600, 3600))  # duplicates, clock jumps back and forth
HOSTS = st.sampled_from(["h1", "h2", "", "h1 ", "<b>h3</b>"])


@st.composite
def tables(draw):
    rows = draw(st.integers(0, 40))
    columns = draw(st.lists(st.sampled_from(["cpu.busy.cpu0", "net.rx_bytes.eth0", "mem.MemFree", "a,b", "ü"]),
                            min_size=1, max_size=4, unique=True))
    times, clock = [], float(T0_S)
    for _ in range(rows):
        clock += draw(STEP)
        times.append(clock)
    frame = pd.DataFrame({"timestamp": times})
    if draw(st.booleans()):
        frame["host"] = [draw(HOSTS) for _ in range(rows)]
    for column in columns:
        frame[column] = [draw(CELL) for _ in range(rows)]
    return frame


def _judged(path):
    try:
        table = load_table(path)
    except TableError as error:
        assert str(path) in str(error) or path.name in str(error), f"the error must name the file: {error}"
        return
    for host in table.hosts.values():
        assert host.host
        assert (np.diff(host.timestamps_ns) > 0).all(), "rows are sorted and de-duplicated"
        assert not np.isinf(host.values).any()
        assert host.values.shape == (len(host.timestamps_ns), len(host.channels.names))


@FUZZ
@given(tables())
def test_csv_tables(tmp_path_factory, frame):
    path = tmp_path_factory.mktemp("csv") / "input.csv"
    frame.to_csv(path, index=False)
    _judged(path)


@FUZZ
@given(tables())
def test_parquet_tables(tmp_path_factory, frame):
    path = tmp_path_factory.mktemp("parquet") / "input.parquet"
    frame.astype({c: str for c in frame.columns if frame[c].dtype == object}).to_parquet(path, index=False)
    _judged(path)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_random_bytes_as_csv(tmp_path_factory, payload):
    path = tmp_path_factory.mktemp("bytes") / "input.csv"
    path.write_bytes(payload)
    _judged(path)


def test_an_infinite_cell_is_named_by_row_and_column_or_repaired(tmp_path):
    path = tmp_path / "input.csv"
    path.write_text(f"timestamp,cpu.busy.cpu0\n{T0_S},1\n{T0_S + 1},inf\n{T0_S + 2},3\n")
    try:
        table = load_table(path)
    except TableError as error:
        assert "cpu.busy.cpu0" in str(error) and "row" in str(error)
        return
    values = next(iter(table.hosts.values())).values[:, 0]
    assert math.isnan(values[1]) and table.repairs
