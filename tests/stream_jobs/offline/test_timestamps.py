"""A table's timestamp column as epoch nanoseconds: epoch seconds, milliseconds or nanoseconds by magnitude, fractions
kept, ISO-8601 times naive (UTC) or with offsets; a row that is empty or not a time is named."""

import pandas as pd
import pytest

from stream_jobs.offline.tables import TableError, load_table
from tests.stream_jobs.offline.table_files import T0_NS, T0_S, only_host, write_text


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
