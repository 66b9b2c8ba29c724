"""`reveal report` as users run it: the report written from a data folder (the default one too), times read as UTC
unless an offset is given, and one-line errors for a missing data or run folder, an unknown DSN scheme and a bad
--since."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sinks.clickhouse import ClickHouseWriter, data_dir_dsn
from reveal.cli.report import iso_time
from tests.own_process import in_own_process
from tests.reveal.report.stored_run import T0

REPO = Path(__file__).resolve().parents[3]


def reveal(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reveal.cli", *args], capture_output=True, text=True,
                          timeout=180, cwd=REPO)


def test_command_writes_the_report(tmp_path):
    data_dir = tmp_path / "data"
    made = subprocess.run([sys.executable, "-c", "import sys; from tests.reveal.report.stored_run import write_run; "
                                                 "write_run(sys.argv[1])", data_dir_dsn(data_dir)],
                          capture_output=True, text=True, timeout=180, cwd=REPO)
    assert made.returncode == 0, made.stderr[-2000:]
    out = tmp_path / "report.html"
    result = reveal("report", "--data-dir", str(data_dir), "--out", str(out))
    assert result.returncode == 0, result.stderr[-2000:]
    assert out.exists() and "report written to" in result.stdout and "report: reading" in result.stderr
    assert out.read_text().count('<svg class="chart"') >= 18


def test_missing_data_dir_is_a_one_line_error(tmp_path):
    result = reveal("report", "--data-dir", str(tmp_path / "nowhere"), "--out", str(tmp_path / "r.html"))
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0
    assert "no such folder" in result.stderr and not (tmp_path / "r.html").exists()


def test_unknown_dsn_scheme_is_a_one_line_error(tmp_path):
    result = reveal("report", "--clickhouse", "mysql://db:3306", "--out", str(tmp_path / "r.html"))
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0
    assert "--clickhouse" in result.stderr and "scheme 'mysql' is not one of chdb, http, https" in result.stderr


def test_bad_since_names_the_expected_form(tmp_path):
    result = reveal("report", "--data-dir", str(tmp_path), "--since", "yesterday", "--out", str(tmp_path / "r.html"))
    assert result.returncode == 2 and "ISO-8601" in result.stderr


def test_run_folder_without_data_is_a_clear_error(tmp_path):
    result = reveal("report", "--run", str(tmp_path), "--out", str(tmp_path / "r.html"))
    assert result.returncode == 2 and "no clickhouse/ folder inside" in result.stderr


def test_since_is_utc_unless_an_offset_is_given():
    assert iso_time("2023-11-14T22:13:20") == T0
    assert iso_time("2023-11-14T23:13:20.5+01:00") == T0 + 500_000_000


def store_one_window(folder: Path) -> None:
    writer = ClickHouseWriter(data_dir_dsn(folder))
    writer.add("windows", [["default-folder-host", "c", 1, 0, 3 * 10**9, 30, 1, 0.5, 1.0, 0, [], [], [], [], ""]])
    writer.close()


def test_without_a_source_the_report_reads_the_data_folder_of_reveal_run(tmp_path):
    in_own_process(store_one_window, tmp_path / "reveal-data")
    written = subprocess.run([sys.executable, "-m", "reveal.cli", "report", "--out", "r.html"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=300)
    assert written.returncode == 0, written.stderr[-2000:]
    assert "default-folder-host" in (tmp_path / "r.html").read_text()
