"""Summaries of py-spy's collapsed stacks: own time, time with callees, and packages, as shares of samples."""

import pytest

from reveal.bench.stack_profile import summarise_collapsed

SITE = "/usr/lib/python3.11/site-packages"
COLLAPSED = [
    f"<module> (reveal/cli/__main__.py:7);run (reveal/cli/worker.py:60);"
    f"flush (sinks/clickhouse.py:131);insert ({SITE}/clickhouse_connect/driver/client.py:700) 30\n",
    f"<module> (reveal/cli/__main__.py:7);on_frame (stream_jobs/host_stage.py:80);"
    f"push (stream_jobs/engine/windows.py:60);push (stream_jobs/engine/windows.py:61) 50\n",
    f"<module> (reveal/cli/__main__.py:7);decode ({SITE}/fastavro/_read.py:10) 20\n",
    "not a stack line\n",
]


def test_own_time_goes_to_the_innermost_function_once_per_line():
    summary = summarise_collapsed(COLLAPSED)
    assert summary.samples == 100
    assert summary.own["push (stream_jobs/engine/windows.py)"] == 50
    assert summary.share(summary.own, 1) == [("push (stream_jobs/engine/windows.py)", pytest.approx(0.5))]


def test_time_with_callees_counts_a_recursive_function_once_per_stack():
    summary = summarise_collapsed(COLLAPSED)
    assert summary.inclusive["<module> (reveal/cli/__main__.py)"] == 100
    assert summary.inclusive["push (stream_jobs/engine/windows.py)"] == 50
    assert summary.inclusive["flush (sinks/clickhouse.py)"] == 30


def test_packages_name_installed_libraries_and_reveal_folders():
    summary = summarise_collapsed(COLLAPSED)
    assert dict(summary.packages) == {"clickhouse_connect": 30, "stream_jobs/engine": 50, "fastavro": 20}
