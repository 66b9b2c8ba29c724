import gzip

import numpy as np
import pandas as pd
import pytest

from stream_jobs.offline.tables import TableError, load_table

T0_S = 1_700_000_000
T0_NS = T0_S * 1_000_000_000


def write_text(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def only_host(table):
    (host,) = table.hosts.values()
    return host


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


def test_fractional_epoch_seconds_keep_their_milliseconds(tmp_path):
    path = write_text(tmp_path, "input.csv", f"timestamp,a\n{T0_S}.25,1\n{T0_S}.5,2\n")
    assert only_host(load_table(path)).timestamps_ns.tolist() == [T0_NS + 250_000_000, T0_NS + 500_000_000]


def test_epoch_milliseconds_are_recognised_by_magnitude(tmp_path):
    path = write_text(tmp_path, "input.csv", f"timestamp,a\n{T0_S * 1000 + 100},1\n{T0_S * 1000 + 200},2\n")
    assert only_host(load_table(path)).timestamps_ns.tolist() == [T0_NS + 100_000_000, T0_NS + 200_000_000]


def test_epoch_nanoseconds_are_kept_exactly(tmp_path):
    path = write_text(tmp_path, "input.csv", f"timestamp,a\n{T0_NS + 7},1\n{T0_NS + 100_000_007},2\n")
    assert only_host(load_table(path)).timestamps_ns.tolist() == [T0_NS + 7, T0_NS + 100_000_007]


def test_naive_iso_times_are_utc(tmp_path):
    path = write_text(tmp_path, "input.csv", "timestamp,a\n2023-11-14T22:13:20,1\n2023-11-14 22:13:20.500,2\n")
    assert only_host(load_table(path)).timestamps_ns.tolist() == [T0_NS, T0_NS + 500_000_000]


def test_iso_times_with_offsets_are_converted_to_utc(tmp_path):
    path = write_text(tmp_path, "input.csv",
                      "timestamp,a\n2023-11-14T22:13:20Z,1\n2023-11-15T00:13:21+02:00,2\n"
                      "2023-11-14T17:13:22.250-05:00,3\n")
    expected = [T0_NS, T0_NS + 10**9, T0_NS + 2_250_000_000]
    assert only_host(load_table(path)).timestamps_ns.tolist() == expected


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


def test_repairs_are_made_and_counted(tmp_path):
    path = write_text(tmp_path, "input.csv", "timestamp,host,a,b\n"
                                             f"{T0_S + 2},h1,3,\n"
                                             f"{T0_S},h1,1,inf\n"
                                             f"{T0_S + 1},h2,7,8\n"
                                             f"{T0_S},h1,99,99\n"
                                             f"{T0_S + 1},h1,2,-inf\n"
                                             f"{T0_S},h2,6,\n")
    table = load_table(path)
    assert table.repairs == {"sorted_rows": 2, "duplicate_rows": 1, "empty_cells": 2, "infinite_values": 2}
    h1 = table.hosts["h1"]
    assert h1.timestamps_ns.tolist() == [T0_NS, T0_NS + 10**9, T0_NS + 2 * 10**9]
    np.testing.assert_array_equal(h1.values, [[1, np.nan], [2, np.nan], [3, np.nan]])
    np.testing.assert_array_equal(table.hosts["h2"].values, [[6, np.nan], [7, 8]])


def test_clean_input_reports_no_repairs(tmp_path):
    path = write_text(tmp_path, "input.csv", f"timestamp,a\n{T0_S},1\n{T0_S + 1},2\n")
    assert load_table(path).repairs == {"sorted_rows": 0, "duplicate_rows": 0, "empty_cells": 0,
                                        "infinite_values": 0}


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


def test_an_impossible_iso_date_names_the_row(tmp_path):
    stamps = ["2024-01-01T00:00:00", "2024-01-01T00:00:01", "2024-01-01T00:00:02", "2024-13-01"]
    pd.DataFrame({"timestamp": stamps, "a": [1.0, 2.0, 3.0, 4.0]}).to_parquet(tmp_path / "input.parquet")
    with pytest.raises(TableError) as raised:
        load_table(tmp_path / "input.parquet")
    assert str(raised.value) == (f"{tmp_path / 'input.parquet'}: row 4: timestamp '2024-13-01' "
                                 f"is not epoch seconds or ISO-8601")


def test_a_word_among_epoch_seconds_names_the_row(tmp_path):
    path = write_text(tmp_path, "input.csv", f"timestamp,a\n{T0_S},1\nsoon,2\n")
    with pytest.raises(TableError, match=r"row 2: timestamp 'soon' is not epoch seconds or ISO-8601"):
        load_table(path)


def test_an_empty_timestamp_names_the_row(tmp_path):
    path = write_text(tmp_path, "input.csv", f"timestamp,a\n{T0_S},1\n{T0_S + 1},2\n,3\n")
    with pytest.raises(TableError, match=r"input\.csv: row 3: timestamp is empty"):
        load_table(path)


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


@pytest.mark.parametrize("name", ["input.txt", "input.json"])
def test_unknown_formats_are_rejected(tmp_path, name):
    with pytest.raises(TableError, match="unsupported input format"):
        load_table(write_text(tmp_path, name, "timestamp,a\n1,2\n"))


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(TableError, match=r"absent\.csv: no such file"):
        load_table(tmp_path / "absent.csv")


def test_table_errors_are_value_errors():
    assert issubclass(TableError, ValueError)
