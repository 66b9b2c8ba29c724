"""`reveal run` read as an operator reads it: `reveal sql`, `reveal report` and a load of the live page and its data
every 5 s for 10 minutes after a 30 s baseline, then the minute their sockets wait out in TIME_WAIT. Every reader is
real load on the host (interpreters starting, loopback TCP, queries, files) and it is Reveal's own: it opens no
incident, while the host is still judged throughout."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from sinks.clickhouse import ClickHouseReader, data_dir_dsn

READ_EVERY_S = 5.0
READING_FOR_S = 600.0
# A closed connection's socket stays in TIME_WAIT this long (Linux's TCP_TIMEWAIT_LEN); the run is judged on through it
TIME_WAIT_S = 60.0


def reveal(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reveal.cli", *args], capture_output=True, text=True, timeout=120)


def read_everything(data_dir: str, url: str, report: str) -> None:
    """What an operator does to a run: a query, a report, and the live page with its data."""
    asked = reveal("sql", "--data-dir", data_dir, "--query", "open-incidents")
    reported = reveal("report", "--data-dir", data_dir, "--out", report)
    assert asked.returncode == 0 and reported.returncode == 0, asked.stderr + reported.stderr
    for path in ("/", "/api/state"):
        with urllib.request.urlopen(url + path, timeout=30) as page:
            assert page.status == 200 and page.read()


@pytest.mark.quiet_host
@pytest.mark.timeout(READING_FOR_S + 300)
def test_reading_a_run_every_5_s_for_10_minutes_opens_no_incident(tmp_path):
    data_dir = str(tmp_path / "data")
    run = subprocess.Popen([sys.executable, "-m", "reveal.cli", "run", "--data-dir", data_dir, "--warmup", "30",
                            "--settle", "3", "--listen", "127.0.0.1:0", "--quiet"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err, learned = [], [], threading.Event()
    threading.Thread(target=_collect_lines, args=(run.stdout, out, "live page: ", threading.Event()),
                     daemon=True).start()
    threading.Thread(target=_collect_lines, args=(run.stderr, err, "baseline learned", learned), daemon=True).start()
    readings = 0
    try:
        assert learned.wait(180), "".join(err)[-3000:]
        url = next(line for line in out if line.startswith("live page: ")).split()[-1].rstrip("/")
        judged_from_ns = time.time_ns()
        while time.time_ns() - judged_from_ns < READING_FOR_S * 1e9:
            started = time.monotonic()
            read_everything(data_dir, url, str(tmp_path / "report.html"))
            readings += 1
            time.sleep(max(0.0, READ_EVERY_S - (time.monotonic() - started)))
        time.sleep(TIME_WAIT_S / 2)  # the sockets the last readers left are still waiting out their time
    finally:
        run.send_signal(signal.SIGINT)
        run.wait(timeout=120)
    assert run.returncode == 0, "".join(err)[-3000:]
    reader = ClickHouseReader(data_dir_dsn(data_dir))
    opened = reader.query("SELECT alert_id, summary FROM alerts FINAL WHERE kind = 'anomaly' AND state = 'open' "
                          "AND start >= fromUnixTimestamp64Nano({t:Int64})", {"t": judged_from_ns})[1]
    judged, worked = reader.query("SELECT countIf(baseline_ready), countIf(regime = 'reveal commands') FROM windows "
                                  "WHERE start >= fromUnixTimestamp64Nano({t:Int64})", {"t": judged_from_ns})[1][0]
    reader.close()
    assert readings >= 0.9 * READING_FOR_S / READ_EVERY_S
    assert opened == [], opened
    assert judged >= 0.9 * (READING_FOR_S + TIME_WAIT_S / 2) and 0 < worked < judged


def _collect_lines(stream, lines: list, wanted: str, seen: threading.Event) -> None:
    """Read `stream` to its end into `lines`, setting `seen` once a line holds `wanted`."""
    for line in stream:
        lines.append(line)
        if wanted in line:
            seen.set()
