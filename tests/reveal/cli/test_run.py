"""`reveal run` end to end: windows that sql can count, retention set on the tables, the summary; and the `reveal`
command itself: its version and the commands its help lists."""

import subprocess
import sys

from sinks.clickhouse import ClickHouseReader, data_dir_dsn


def reveal(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reveal.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_a_run_keeps_frames_and_windows_as_long_as_asked_and_ends_with_the_tables_totals(tmp_path):
    data_dir = tmp_path / "data"
    run = reveal("run", "--duration", "15", "--data-dir", str(data_dir), "--warmup", "10", "--retention",
                 "6h", "--window-retention", "7d", "--listen", "127.0.0.1:0", "--sources", "network")
    assert run.returncode == 0, run.stderr[-2000:]
    reader = ClickHouseReader(data_dir_dsn(data_dir))
    frames = reader.query("SHOW CREATE TABLE frames")[1][0][0]
    windows = reader.query("SHOW CREATE TABLE windows")[1][0][0]
    stored = reader.query("SELECT count() FROM windows")[1][0][0]
    reader.close()
    assert "toIntervalSecond(21600)" in frames and "toIntervalSecond(604800)" in windows
    assert f"{stored} windows (" in run.stdout.splitlines()[-1]
    assert "settings: " in run.stderr and "retention=21600.0 (flag)" in run.stderr


def test_version_is_the_installed_one():
    from importlib.metadata import version

    result = reveal("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"reveal {version('reveal')}"


def test_help_lists_every_command():
    result = reveal("--help")
    assert result.returncode == 0
    for command in ("run", "agent", "worker", "sql"):
        assert f"    {command}" in result.stdout


def test_embedded_run_stores_windows_that_sql_can_count(tmp_path):
    data_dir = str(tmp_path / "data")
    run = reveal("run", "--duration", "20", "--data-dir", data_dir, "--warmup", "10")
    assert run.returncode == 0, run.stderr[-2000:]
    assert "learning baseline" in run.stdout and "score" in run.stdout and "live page: http://127.0.0.1:" in run.stdout
    counted = reveal("sql", "--data-dir", data_dir, "--format", "tsv", "SELECT count() FROM windows")
    assert counted.returncode == 0, counted.stderr
    assert int(counted.stdout.splitlines()[1]) >= 14


def test_a_run_stopped_with_ctrl_c_resumes_its_baseline_when_started_again(tmp_path):
    import signal
    import time

    data_dir = str(tmp_path / "data")
    common = ("--data-dir", data_dir, "--warmup", "10", "--listen", "127.0.0.1:0", "--no-ui",
              "--sources", "cpu,memory")
    first = subprocess.Popen([sys.executable, "-m", "reveal.cli", "run", *common], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    time.sleep(20)
    first.send_signal(signal.SIGINT)
    out, err = first.communicate(timeout=60)
    assert first.returncode == 0 and "baseline learned" in err, err[-2000:]
    assert err.count(f"baseline not resumed: no baseline of this host is stored in {data_dir}") == 1
    second = reveal("run", "--duration", "6", *common)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "baseline restored" in second.stderr and "learning baseline" not in second.stdout
    assert "baseline not resumed" not in second.stderr
    windows = [line for line in second.stdout.splitlines() if "  window " in line]
    assert windows and all("score" in line for line in windows), second.stdout[-2000:]


def test_incidents_a_killed_run_left_open_are_closed_with_a_note_when_it_starts_again(tmp_path):
    import socket

    from sinks.clickhouse import ClickHouseWriter
    from sinks.landing import ABANDONED_NOTE

    data_dir = tmp_path / "data"
    host = socket.gethostname()
    writer = ClickHouseWriter(data_dir_dsn(data_dir))
    writer.add("alerts", [[f"{host}/anomaly:cpu", host, "default", "open", 10**18, 10**18 + 3 * 10**9, 4.0, "cpu",
                           "cpu anomaly", "", "anomaly"],
                          [f"{host}/anomaly:memory", host, "default", "open", 10**18, 10**18 + 10**9, 3.0, "memory",
                           "memory anomaly", "", "anomaly"],
                          [f"{host}/anomaly:memory", host, "default", "closed", 10**18, 10**18 + 2 * 10**9, 3.0,
                           "memory", "memory anomaly", "", "anomaly"]])
    writer.close()
    run = reveal("run", "--duration", "3", "--data-dir", str(data_dir), "--listen", "127.0.0.1:0", "--no-ui",
                 "--sources", "cpu")
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"1 incident of {host} left open" in run.stdout and f"{host}/anomaly:cpu" in run.stdout
    reader = ClickHouseReader(data_dir_dsn(data_dir))
    still_open = reader.query("SELECT alert_id FROM alerts FINAL GROUP BY alert_id "
                              "HAVING argMax(state, (end, state = 'closed')) != 'closed'")
    closing = reader.query("SELECT summary, toUnixTimestamp64Nano(end) FROM alerts FINAL "
                           "WHERE alert_id = {a:String} AND state = 'closed'", {"a": f"{host}/anomaly:cpu"})
    reader.close()
    assert still_open[1] == []
    assert ABANDONED_NOTE in closing[1][0][0] and closing[1][0][1] == 10**18 + 3 * 10**9


def test_a_command_reads_no_package_metadata_unless_asked_for_the_version():
    code = ("import sys\nfrom reveal.cli import build_parser\n"
            "build_parser().parse_args(['agent', '--bootstrap', '127.0.0.1:9092'])\n"
            "print('importlib.metadata' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "False", result.stderr


def test_the_agent_s_process_never_loads_fastavro():
    code = ("import sys\nfrom reveal.cli import build_parser\n"
            "args = build_parser().parse_args(['agent', '--bootstrap', '127.0.0.1:9092'])\n"
            "import producers.agent, producers.publisher, producers.source_table, producers.metrics\n"
            "from producers.synthetic import synthetic_catalog\n"
            "from schemas.agent_records import encode_catalog\n"
            "encode_catalog(synthetic_catalog('h'))\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('fastavro', 'sklearn', 'faust', 'chdb')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "[]", result.stdout + result.stderr
