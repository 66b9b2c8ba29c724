"""`reveal run` end to end: retention set on the tables, the version, the summary."""

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
