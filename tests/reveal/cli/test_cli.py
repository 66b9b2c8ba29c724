"""The `reveal` command as a user runs it: embedded mode end to end, queries, and clear errors."""

import subprocess
import sys


def reveal(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reveal.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


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


def test_invalid_duration_names_the_option_and_the_accepted_forms():
    result = reveal("run", "--duration", "soon")
    assert result.returncode == 2
    assert "--duration" in result.stderr and "examples: 20, 2.5, 90s, 5m, 1h" in result.stderr


def test_sql_with_malformed_parameter_is_a_clear_error(tmp_path):
    result = reveal("sql", "--data-dir", str(tmp_path), "--param", "oops", "SELECT 1")
    assert result.returncode == 2 and "NAME=VALUE" in result.stderr
