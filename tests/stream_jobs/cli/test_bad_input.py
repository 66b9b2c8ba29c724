"""Every command given bad values: exit status 2, one line on stderr that names the option or the value and what is
allowed, no traceback, and nothing done (no folder created, no work started)."""

import re
import subprocess
import sys
import time

import pytest

from sinks.clickhouse import ClickHouseWriter, data_dir_dsn

LOG_RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (DEBUG|INFO|WARNING) ")


def reveal(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stream_jobs.cli", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A data folder with one host's windows, and a detect output file."""
    folder = tmp_path_factory.mktemp("bad-input")
    writer = ClickHouseWriter(data_dir_dsn(folder / "data"))
    writer.add("windows", [["stored-host", "c", 1, 0, 3 * 10**9, 30, 1, 0.5, 1.0, 0, [], [], [], [], ""]])
    writer.close()
    table = folder / "table.csv"
    table.write_text("timestamp,host,x\n" + "".join(f"{t},h,{t % 7}\n" for t in range(100)))
    windows = folder / "windows.csv"
    windows.write_text("host,window_start,window_end,flagged\nonly-a,2026-01-01T00:00:00,2026-01-01T00:00:03,1\n")
    other = folder / "other.csv"
    other.write_text("host,window_start,window_end,flagged\nonly-b,2026-01-01T00:00:00,2026-01-01T00:00:03,1\n")
    return folder


CASES = {
    "duration": (["run", "--duration", "soon"], "--duration"),
    "risk": (["run", "--risk", "2"], "--risk"),
    "warmup": (["run", "--warmup-windows", "3"], "--warmup-windows"),
    "procfs": (["run", "--procfs", "/nonexistent"], "--procfs"),
    "sysfs": (["agent", "--bootstrap", "127.0.0.1:1", "--sysfs", "/nonexistent"], "--sysfs"),
    "listen": (["run", "--listen", "nowhere"], "--listen"),
    "retention": (["run", "--retention", "0"], "--retention"),
    "selection": (["detect", "--input", "{folder}/table.csv", "--selection-threshold", "3"], "--selection-threshold"),
    "interval": (["agent", "--bootstrap", "127.0.0.1:1", "--interval", "-1"], "--interval"),
    "source interval": (["run", "--data-dir", "{folder}/run", "--source-interval", "/proc/nope=1",
                         "--duration", "5"], "/proc/nope"),
    "worker dsn": (["worker", "--bootstrap", "127.0.0.1:1", "--clickhouse", "foo://x"], "--clickhouse"),
    "sql folder": (["sql", "--data-dir", "{folder}/no/such", "SELECT 1"], "no Reveal data"),
    "sql format": (["sql", "--format", "xml", "SELECT 1"], "--format"),
    "sql dsn": (["sql", "--clickhouse", "mysql://x", "SELECT 1"], "--clickhouse"),
    "detect input": (["detect", "--input", "{folder}/nope.csv"], "nope.csv"),
    "detect output folder": (["detect", "--input", "{folder}/table.csv", "--output", "/nonexistent/dir/x.csv"],
                             "/nonexistent/dir"),
    "detect output kind": (["detect", "--input", "{folder}/table.csv", "--output", "{folder}/x.parquet"], ".csv"),
    "compare missing": (["compare-windows", "{folder}/nope.csv", "{folder}/windows.csv"], "nope.csv"),
    "compare disjoint": (["compare-windows", "{folder}/windows.csv", "{folder}/other.csv"], "share no host"),
    "report host": (["report", "--data-dir", "{folder}/data", "--host", "nosuchhost", "--out", "{folder}/r.html"],
                    "nosuchhost"),
    "report folder": (["report", "--data-dir", "{folder}/none", "--out", "{folder}/r.html"], "--data-dir"),
    "channels folder": (["channels", "--data-dir", "{folder}/none"], "no Reveal data"),
    "channels host": (["channels", "--data-dir", "{folder}/data", "--host", "nosuchhost"], "nosuchhost"),
    "bench count": (["bench", "engine", "--hosts", "0"], "--hosts"),
    "config file": (["sql", "--config", "{folder}/missing.toml", "SELECT 1"], "missing.toml"),
    "command": (["nope"], "nope"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_value_is_one_line_and_exit_status_2(case, stored):
    args, named = CASES[case]
    started = time.monotonic()
    result = reveal(*[a.replace("{folder}", str(stored)) for a in args], cwd=stored)
    told = [line for line in result.stderr.splitlines() if not LOG_RECORD.match(line)]
    assert result.returncode == 2, (case, result.stdout[-500:], result.stderr[-1500:])
    assert "Traceback" not in result.stderr and len(told) == 1, result.stderr[-1500:]
    assert named.replace("{folder}", str(stored)) in told[0] and told[0].startswith("reveal"), told
    assert time.monotonic() - started < 20, "the mistake is found before any work"
    assert not (stored / "reveal-data").exists() and not (stored / "no").exists()


def test_a_config_file_with_an_unknown_key_names_it_and_what_is_allowed(tmp_path):
    config = tmp_path / "reveal.toml"
    config.write_text('[run]\nintervall = 0.2\n')
    result = reveal("run", "--config", str(config), "--duration", "5", cwd=tmp_path)
    assert result.returncode == 2 and "'intervall'" in result.stderr and "interval" in result.stderr
    config.write_text('[run]\nrisk = 7\n')
    result = reveal("run", "--config", str(config), "--duration", "5", cwd=tmp_path)
    assert result.returncode == 2 and "risk" in result.stderr and "between 0 and 1" in result.stderr
    assert not (tmp_path / "reveal-data").exists()
