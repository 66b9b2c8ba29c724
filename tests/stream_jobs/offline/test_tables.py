"""Loading a recorded table by its file's suffix: an unknown format and a missing file are refused by name, and a table
error is a ValueError."""

import pytest

from stream_jobs.offline.tables import TableError, load_table
from tests.stream_jobs.offline.table_files import write_text


@pytest.mark.parametrize("name", ["input.txt", "input.json"])
def test_unknown_formats_are_rejected(tmp_path, name):
    with pytest.raises(TableError, match="unsupported input format"):
        load_table(write_text(tmp_path, name, "timestamp,a\n1,2\n"))


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(TableError, match=r"absent\.csv: no such file"):
        load_table(tmp_path / "absent.csv")


def test_table_errors_are_value_errors():
    assert issubclass(TableError, ValueError)
