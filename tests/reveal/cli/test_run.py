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
    run = reveal("run", "--duration", "15", "--data-dir", str(data_dir), "--warmup-windows", "10", "--retention",
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
    run = reveal("run", "--duration", "20", "--data-dir", data_dir, "--warmup-windows", "10")
    assert run.returncode == 0, run.stderr[-2000:]
    assert "learning baseline" in run.stdout and "score" in run.stdout and "live page: http://127.0.0.1:" in run.stdout
    counted = reveal("sql", "--data-dir", data_dir, "--format", "tsv", "SELECT count() FROM windows")
    assert counted.returncode == 0, counted.stderr
    assert int(counted.stdout.splitlines()[1]) >= 14
