"""The pipeline bench's helpers that need no broker: queries of a chDB folder run in a child process, and the replay's
report waited for, or the replay's death named."""

import multiprocessing
import subprocess
import sys

import pytest

from reveal.bench.pipeline import _wait_for_report, sql
from sinks.clickhouse import data_dir_dsn


def _exit_with(code: int) -> None:
    raise SystemExit(code)


def _report(results) -> None:
    results.put({"frames": 42})


def test_a_query_of_a_chdb_folder_comes_back_as_rows(tmp_path):
    """The folder is written by another process: chDB opens one folder per process, and this one may hold the tests'
    shared folder already."""
    write = ("import sys\nfrom sinks.clickhouse import ClickHouseWriter, data_dir_dsn\n"
             "writer = ClickHouseWriter(data_dir_dsn(sys.argv[1]))\n"
             "writer.add('windows', [[h, 'c', 1, 0, 3 * 10**9, 30, 1, 0.5, 1.0, 0, [], [], [], [], ''] for h in 'ab'])\n"
             "writer.close()\n")
    subprocess.run([sys.executable, "-c", write, str(tmp_path / "data")], check=True, timeout=120)
    rows = sql(data_dir_dsn(tmp_path / "data"),
               "SELECT host, count() AS windows FROM windows GROUP BY host ORDER BY host")
    assert rows == [{"host": "a", "windows": 1}, {"host": "b", "windows": 1}]
    with pytest.raises(RuntimeError, match="query on .* failed"):
        sql(data_dir_dsn(tmp_path / "data"), "SELECT nothing FROM nowhere")


def test_the_replays_report_is_awaited_and_its_death_named():
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    reporter = context.Process(target=_report, args=(results,))
    reporter.start()
    assert _wait_for_report(reporter, results, timeout_s=60) == {"frames": 42}
    reporter.join()
    dying = context.Process(target=_exit_with, args=(3,))
    dying.start()
    dying.join()
    with pytest.raises(RuntimeError, match="the replay process exited with code 3"):
        _wait_for_report(dying, results, timeout_s=60)
