"""A real embedded run's query service: reveal sql and reveal report reading the data folder while the run writes it,
a second run on the folder refused, JSON errors for bad requests, and values that cross the service unchanged."""

import json
import subprocess
import sys
import urllib.request

import pytest

from reveal.live.server import decode_value, encode_value
from tests.reveal.live.conftest import HOSTILE


def reveal(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reveal.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_sql_reads_the_folder_of_a_running_run_through_it(live_run):
    data_dir, _ = live_run
    counted = reveal("sql", "--data-dir", str(data_dir), "--format", "tsv",
                     "SELECT count() FROM windows WHERE host = {h:String}", "--param", f"h={HOSTILE}")
    assert counted.returncode == 0, counted.stderr
    assert int(counted.stdout.splitlines()[1]) >= 1


def test_sql_cannot_change_the_data_of_a_running_run(live_run):
    data_dir, _ = live_run
    dropped = reveal("sql", "--data-dir", str(data_dir), "DROP TABLE windows")
    assert dropped.returncode == 2 and len(dropped.stderr.strip().splitlines()) == 1
    assert "read" in dropped.stderr
    refused = reveal("sql", "--data-dir", str(data_dir), "--write", "DROP TABLE windows")
    assert refused.returncode == 2 and "running reveal run" in refused.stderr
    assert reveal("sql", "--data-dir", str(data_dir), "SELECT count() FROM windows").returncode == 0


def test_report_reads_the_folder_of_a_running_run(live_run, tmp_path):
    data_dir, _ = live_run
    out = tmp_path / "report.html"
    written = reveal("report", "--data-dir", str(data_dir), "--out", str(out))
    assert written.returncode == 0, written.stderr[-2000:]
    assert "running reveal run" in written.stderr
    assert "&lt;img src=x" in out.read_text() and HOSTILE not in out.read_text()


def test_a_second_run_on_the_same_folder_is_refused(live_run):
    data_dir, url = live_run
    second = reveal("run", "--duration", "5", "--data-dir", str(data_dir), "--listen", "127.0.0.1:0")
    assert second.returncode == 2 and url in second.stderr and "Traceback" not in second.stderr


def test_unknown_paths_and_bad_queries_get_json_errors(live_run):
    _, url = live_run
    request = urllib.request.Request(f"{url}/api/query", b'{"nope": 1}', {"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 400 and "sql" in json.loads(refused.value.read())["error"]


def test_values_cross_the_query_service_unchanged():
    import datetime as dt
    values = [dt.datetime(2026, 11, 25, 12, 0, 1, 5000), float("nan"), float("inf"), [1.5, float("-inf")], "x", 3]
    decoded = [decode_value(json.loads(json.dumps(encode_value(v)))) for v in values]
    assert decoded[0] == values[0] and decoded[1] != decoded[1] and decoded[2] == float("inf")
    assert decoded[3] == [1.5, float("-inf")] and decoded[4:] == ["x", 3]
