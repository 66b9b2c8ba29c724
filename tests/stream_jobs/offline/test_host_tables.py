"""What a loaded input holds per host, and the repairs every format shares: rows sorted, duplicates dropped, empty and
infinite cells counted; a table's typical interval; and raw cumulative counters read as rates, on the input and its
baseline alike."""

import numpy as np

from stream_jobs.offline.host_tables import (RecordedTable, counters_as_rates, empty_repairs, gauge_channels,
                                             repaired_host, typical_interval_s)
from stream_jobs.offline.tables import load_table
from tests.stream_jobs.offline.table_files import T0_NS, T0_S, write_text


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


def test_the_typical_interval_is_the_median_spacing_or_the_agents_when_there_is_one_row():
    assert typical_interval_s(np.array([0, 10**9, 3 * 10**9, 4 * 10**9])) == 1.0
    assert typical_interval_s(np.array([T0_NS])) == 0.1


def one_host(values, host: str = "h") -> RecordedTable:
    """A table of one host, a row a second, of a column `bytes_sent` and a column `load` (both gauges)."""
    table = repaired_host(host, "c", gauge_channels(["bytes_sent", "load"]), np.arange(len(values)) * 10**9,
                          np.array(values, dtype=np.float64), empty_repairs())
    return RecordedTable("input.csv", {host: table}, {})


def test_a_column_that_only_rises_is_read_as_a_rate_of_a_counter():
    converted, baseline, names = counters_as_rates(one_host([[0, 5], [10, 4], [30, 6], [60, 5]]))
    assert names == ("bytes_sent",) and baseline is None
    host = converted.hosts["h"]
    assert host.channels.kinds == ("counter", "gauge")
    np.testing.assert_array_equal(host.values, [[np.nan, 5], [10, 4], [20, 6], [30, 5]])


def test_a_column_read_as_a_counter_in_the_input_but_not_in_the_baseline_stays_a_gauge_in_both():
    table, baseline = one_host([[0, 5], [10, 4], [30, 6], [60, 5]]), one_host([[5, 5], [4, 4], [6, 6], [5, 5]])
    assert counters_as_rates(table, baseline) == (table, baseline, ())
