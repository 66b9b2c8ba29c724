"""The host-faults bench's judgement of stored alerts in chDB: each fault found by the first alert that opens within it
or its grace period, every other alert after the baseline a false one; its printed table; and the faults' commands."""

import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from reveal.bench.host_faults import (ALLOCATION_BYTES, NS_PER_S, BenchPlan, HandFault, allocation_command,
                                      channel_moved, claimed_channels, dd_command, first_stored, fork_storm_command,
                                      judge, print_result, StateReader, _wait_until_learned)
from schemas.records import Alert
from sinks.clickhouse import ClickHouseWriter, data_dir_dsn
from sinks.rows import alert_row
from tests.own_process import in_own_process

T0 = 1_700_000_000 * NS_PER_S


def alert(alert_id: str, state: str, end_s: float, subsystem: str, summary: str, severity: float = 3.0) -> Alert:
    return Alert(alert_id, "bench-host", "host-faults", state, T0, T0 + round(end_s * NS_PER_S), severity, subsystem,
                 summary)


def check_faults_are_found_by_the_first_alert_within_them_and_the_rest_are_false(tmp_path: Path) -> None:
    writer = ClickHouseWriter(data_dir_dsn(tmp_path / "data"))
    writer.add("alerts", [alert_row(a) for a in (
        alert("early", "open", 20, "cpu", "before the judged time"),
        alert("burn", "open", 112, "cpu", "cpu.busy rose on every core"),
        alert("burn", "update", 125, "cpu", "cpu.busy rose on every core"),
        alert("late", "open", 138, "memory", "mem.Dirty rose"),
        alert("stray", "open", 300, "network", "net.rx_bytes fell"))])
    writer.close()
    faults = [HandFault("cpu burner", "cpu", T0 + 100 * NS_PER_S, T0 + 130 * NS_PER_S),
              HandFault("2 GiB allocation", "memory", T0 + 200 * NS_PER_S, T0 + 230 * NS_PER_S)]
    result = judge(tmp_path / "data", faults, T0 + 50 * NS_PER_S, grace_s=10)
    burner, allocation = result["faults"]
    assert burner == {"fault": "cpu burner", "expected_subsystem": "cpu", "found": True, "delay_s": 12.0,
                      "within": False, "subsystem": "cpu", "claim": "cpu.busy rose on every core", "channel": "",
                      "moved": False}
    assert allocation["found"] is False and allocation["delay_s"] is None
    assert result["false_alerts"] == 1 and result["false_alert_summaries"] == ["net.rx_bytes fell"]
    lines = []
    print_result(result, clean_s=600, out=lines.append)
    assert lines[1].split()[:7] == ["cpu", "burner", "yes", "12.0", "no", "no", "cpu"]
    assert lines[2].split()[:7] == ["2", "GiB", "allocation", "NO", "-", "no", "no"]
    assert lines[3].endswith("run 0 times): 1") and lines[4] == "  net.rx_bytes fell"


def test_faults_are_found_by_the_first_alert_within_them_and_the_rest_are_false(tmp_path):
    in_own_process(check_faults_are_found_by_the_first_alert_within_them_and_the_rest_are_false, tmp_path)


def check_of_alerts_one_window_opened_the_most_severe_is_the_one_judged(tmp_path: Path) -> None:
    writer = ClickHouseWriter(data_dir_dsn(tmp_path / "data"))
    writer.add("alerts", [alert_row(a) for a in (
        alert("a-side", "open", 104, "cpu", "cpu.system rose", severity=3.5),
        alert("b-main", "open", 104, "memory", "mem.Committed_AS rose", severity=4.6),
        alert("c-side", "open", 104, "cpu", "cpu.user rose", severity=1.2))])
    writer.close()
    allocation = HandFault("2 GiB allocation", "memory", T0 + 100 * NS_PER_S, T0 + 120 * NS_PER_S)
    judged = judge(tmp_path / "data", [allocation], T0, grace_s=5)["faults"][0]
    assert (judged["subsystem"], judged["claim"]) == ("memory", "mem.Committed_AS rose")


def test_of_alerts_one_window_opened_the_most_severe_is_the_one_judged(tmp_path):
    in_own_process(check_of_alerts_one_window_opened_the_most_severe_is_the_one_judged, tmp_path)


def test_the_dd_burst_writes_inside_the_given_folder_and_the_allocation_is_2_gib():
    assert "of=/scratch/reveal-bench-dd" in dd_command(Path("/scratch"))[-1]
    assert ALLOCATION_BYTES == 2 << 30 and f"bytearray({ALLOCATION_BYTES})" in allocation_command()[-1]


def test_the_claimed_channels_are_those_the_summary_names_in_its_order():
    summary = ("major cpu anomaly on h over 3 windows, peak severity 5.0 of 10; cpu.forks mean z=+40.1, "
               "mem.Dirty std z=-3.0")
    assert claimed_channels(summary) == ["cpu.forks", "mem.Dirty"]
    assert claimed_channels("regime change") == []


def check_a_counter_moved_when_its_rate_left_what_the_seconds_before_the_fault_had(tmp_path: Path) -> None:
    from schemas.records import Catalog, Channel, Frame
    from sinks.rows import catalog_row, frame_row

    catalog = Catalog("bench-host", "host-faults", (Channel("cpu.forks", "cpu", "counter", "processes"),
                                                    Channel("mem.MemFree", "memory", "gauge", "bytes")), 1.0)
    rng = np.random.default_rng(0)
    forks = np.cumsum(np.where(np.arange(60) >= 40, 500.0, 3.0) + rng.normal(0, 1, 60))
    frames = [Frame("bench-host", "host-faults", T0 + i * NS_PER_S, i, catalog.version,
                    np.array([forks[i], 1e9 + rng.normal(0, 1e3)]))
              for i in range(60)]
    writer = ClickHouseWriter(data_dir_dsn(tmp_path / "data"))
    writer.add("catalogs", [catalog_row(catalog)])
    writer.add("frames", [frame_row(f) for f in frames])
    writer.flush()
    start, opened = T0 + 40 * NS_PER_S, T0 + 45 * NS_PER_S
    assert channel_moved(writer, "bench-host", "cpu.forks", start, opened)
    assert not channel_moved(writer, "bench-host", "mem.MemFree", start, opened)
    assert not channel_moved(writer, "bench-host", "no.such", start, opened)
    assert first_stored(writer, "bench-host", ["cpu.busy_pct.all", "cpu.forks", "mem.MemFree"]) == "cpu.forks"
    assert first_stored(writer, "bench-host", ["cpu.busy_pct.all"]) is None
    writer.close()


def test_a_counter_moved_when_its_rate_left_what_the_seconds_before_the_fault_had(tmp_path):
    in_own_process(check_a_counter_moved_when_its_rate_left_what_the_seconds_before_the_fault_had, tmp_path)


def test_a_plan_without_faults_lasts_its_baseline_and_clean_time_and_the_fork_storm_forks():
    assert BenchPlan(baseline_s=30, clean_s=1800, faults=False).duration_s() == 20 + 30 + 1800 + 15
    assert BenchPlan(baseline_s=30, fault_s=10, gap_s=20, clean_s=60).duration_s() == 20 + 30 + 4 * 30 + 60 + 15
    assert "while true; do /bin/true; done" in fork_storm_command()[-1]


def test_faults_wait_until_the_run_reports_its_baseline_learned_however_long_it_took_to_start():
    """The run's own state says when it learned; the bench does not guess from its start (a slow start would put the
    first fault inside the baseline, learned as normal)."""
    states = iter([{"hosts": []}] * 2 + [{"hosts": [{"windows": 3, "learning": "learning this host's first baseline"}]}]
                  + [{"hosts": [{"windows": 40, "learning": ""}]}] * 10)

    class State(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(next(states)).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), State)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    runner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    reader = StateReader(f"http://127.0.0.1:{server.server_address[1]}", every_s=0.5)
    try:
        before = time.time_ns()
        reader.start()
        learned = _wait_until_learned(reader, runner, 30)
        assert learned - before >= 1.5 * NS_PER_S, "three answers said it was still learning"
        reads_when_learned = reader.reads
        time.sleep(2.2)
        assert reader.reads >= reads_when_learned + 3, "the state is read at the same pace once learned"
    finally:
        reader.stop()
        runner.kill()
        server.shutdown()
    silent = StateReader("http://127.0.0.1:9")
    silent.start()
    with pytest.raises(RuntimeError, match="never finished learning"):
        _wait_until_learned(silent, runner, 5)
    silent.stop()
