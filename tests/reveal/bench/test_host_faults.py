"""The host-faults bench's judgement of stored alerts in chDB: each fault found by the first alert that opens within it
or its grace period, every other alert after the baseline a false one; its printed table; and the faults' commands."""

from pathlib import Path

from reveal.bench.host_faults import (ALLOCATION_BYTES, NS_PER_S, HandFault, allocation_command, dd_command, judge,
                                      print_result)
from schemas.records import Alert
from sinks.clickhouse import ClickHouseWriter, data_dir_dsn
from sinks.rows import alert_row

T0 = 1_700_000_000 * NS_PER_S


def alert(alert_id: str, state: str, end_s: float, subsystem: str, summary: str) -> Alert:
    return Alert(alert_id, "bench-host", "host-faults", state, T0, T0 + round(end_s * NS_PER_S), 3.0, subsystem,
                 summary)


def test_faults_are_found_by_the_first_alert_within_them_and_the_rest_are_false(tmp_path):
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
                      "subsystem": "cpu", "claim": "cpu.busy rose on every core"}
    assert allocation["found"] is False and allocation["delay_s"] is None
    assert result["false_alerts"] == 1 and result["false_alert_summaries"] == ["net.rx_bytes fell"]
    lines = []
    print_result(result, clean_s=600, out=lines.append)
    assert lines[1].split()[:5] == ["cpu", "burner", "yes", "12.0", "cpu"]
    assert lines[2].split()[:5] == ["2", "GiB", "allocation", "NO", "-"]
    assert lines[3].endswith("600 s clean at the end): 1") and lines[4] == "  net.rx_bytes fell"


def test_the_dd_burst_writes_inside_the_given_folder_and_the_allocation_is_2_gib():
    assert "of=/scratch/reveal-bench-dd" in dd_command(Path("/scratch"))[-1]
    assert ALLOCATION_BYTES == 2 << 30 and f"bytearray({ALLOCATION_BYTES})" in allocation_command()[-1]
