"""The commands' option checks: every command given bad values exits with status 2 and one line on stderr that names
the option or the value and what is allowed, no traceback, and nothing done (no folder created, no work started);
good values read as meant."""

import argparse
import re
import subprocess
import sys
import time

import pytest

from reveal.cli.options import (bootstrap_servers, listen_address, output_file, positive_seconds, publish_every_seconds,
                                settle_seconds)
from sinks.clickhouse import ClickHouseWriter, data_dir_dsn

LOG_RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (DEBUG|INFO|WARNING) ")


def reveal(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reveal.cli", *args], capture_output=True, text=True,
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
    (folder / "broken.toml").write_text("[run\ninterval = 0.2\n")
    return folder


CASES = {
    "duration": (["run", "--duration", "soon"], "--duration"),
    "risk": (["run", "--risk", "0"], "--risk"),
    "warmup": (["run", "--warmup", "0"], "--warmup"),
    "warmup without end": (["run", "--warmup", "1e999"], "--warmup"),
    "stride not a number": (["run", "--stride", "nan"], "--stride"),
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
    "log level": (["--log-level", "LOUD", "channels"], "--log-level"),
    "config syntax": (["run", "--config", "{folder}/broken.toml"], "not valid TOML"),
    "run interval": (["run", "--interval", "0"], "--interval"),
    "run cluster": (["run", "--cluster", ""], "--cluster"),
    "run data dir is a file": (["run", "--data-dir", "{folder}/table.csv"], "--data-dir"),
    "run data dir cannot be made": (["run", "--data-dir", "/proc/no-reveal-here"], "--data-dir"),
    "collect output folder": (["collect", "--out", "/nonexistent/dir/x.avro", "--duration", "2"], "/nonexistent/dir"),
    "collect output kind": (["collect", "--out", "{folder}/x.csv", "--duration", "2"], ".avro"),
    "collect output missing": (["collect", "--duration", "2"], "--out"),
    "collect duration": (["collect", "--out", "{folder}/x.avro", "--duration", "-5"], "--duration"),
    "agent bootstrap": (["agent", "--bootstrap", "nohostport", "--duration", "2"], "--bootstrap"),
    "agent host": (["agent", "--bootstrap", "127.0.0.1:1", "--host", "", "--duration", "2"], "--host"),
    "agent spool folder": (["agent", "--bootstrap", "127.0.0.1:1", "--spool-dir", "/proc/no-reveal-here"],
                           "--spool-dir"),
    "agent spool size": (["agent", "--bootstrap", "127.0.0.1:1", "--spool-max-mb", "-5"], "--spool-max-mb"),
    "agent recording kind": (["agent", "--bootstrap", "127.0.0.1:1", "--record", "{folder}/x.csv"], ".avro"),
    "agent security protocol": (["agent", "--bootstrap", "127.0.0.1:1", "--kafka-security-protocol", "TLS"],
                                "--kafka-security-protocol"),
    "worker bootstrap": (["worker", "--bootstrap", "127.0.0.1", "--clickhouse", "chdb://{folder}/w"], "--bootstrap"),
    "worker embedded folder": (["worker", "--bootstrap", "127.0.0.1:1", "--clickhouse", "chdb:///proc/no-reveal-here"],
                               "--clickhouse"),
    "worker pending rows": (["worker", "--bootstrap", "127.0.0.1:1", "--clickhouse", "chdb://{folder}/w",
                             "--max-pending-rows", "0"], "--max-pending-rows"),
    "sql parameter": (["sql", "--data-dir", "{folder}/data", "--param", "h", "SELECT 1"], "--param"),
    "sql unknown retrospective": (["sql", "--data-dir", "{folder}/data", "--query", "no-such"], "no such retrospective"),
    "sql retrospective parameter": (["sql", "--data-dir", "{folder}/data", "--query", "host-incidents"],
                                    "needs --param host"),
    "sql query and retrospective": (["sql", "--data-dir", "{folder}/data", "--query", "open-incidents", "SELECT 1"],
                                    "not both"),
    "alerts webhook": (["alerts", "--bootstrap", "127.0.0.1:1", "--webhook", "ftp://x/hook"], "--webhook"),
    "alerts severity": (["alerts", "--bootstrap", "127.0.0.1:1", "--min-severity", "-1"], "--min-severity"),
    "alerts format": (["alerts", "--bootstrap", "127.0.0.1:1", "--webhook", "http://x/h", "--webhook-format", "teams"],
                      "--webhook-format"),
    "agent metrics address": (["agent", "--bootstrap", "127.0.0.1:1", "--metrics-listen", "nowhere"],
                              "--metrics-listen"),
    "sql write refused": (["sql", "--data-dir", "{folder}/data", "DROP TABLE windows"], "--write"),
    "sql one statement": (["sql", "--data-dir", "{folder}/data", "--write", "SELECT 1; DROP TABLE windows"],
                          "one statement"),
    "report output folder": (["report", "--data-dir", "{folder}/data", "--out", "/nonexistent/dir/r.html"],
                             "/nonexistent/dir"),
    "report output kind": (["report", "--data-dir", "{folder}/data", "--out", "{folder}/r.pdf"], ".html"),
    "report since": (["report", "--data-dir", "{folder}/data", "--since", "yesterday", "--out", "{folder}/r.html"],
                     "--since"),
    "detect window": (["detect", "--input", "{folder}/table.csv", "--window", "0"], "--window"),
    "detect baseline": (["detect", "--input", "{folder}/table.csv", "--baseline", "{folder}/missing.csv"],
                        "missing.csv"),
    "detect risk": (["detect", "--input", "{folder}/table.csv", "--risk", "-1"], "--risk"),
    "channels procfs": (["channels", "--procfs", "/nonexistent"], "--procfs"),
    "bench agent interval": (["bench", "agent", "--interval", "0"], "--interval"),
    "bench agent bootstrap": (["bench", "agent", "--bootstrap", "kafka"], "--bootstrap"),
    "bench pipeline workers": (["bench", "pipeline", "--workers", "9"], "--workers"),
    "bench pipeline profile": (["bench", "pipeline", "--profile", "/nonexistent/dir/stacks.txt"], "/nonexistent/dir"),
    "bench host-faults folder": (["bench", "host-faults", "--data-dir", "/proc/no-reveal-here"], "--data-dir"),
    "bench host-faults length": (["bench", "host-faults", "--fault", "0"], "--fault"),
    "bench name": (["bench", "everything"], "everything"),
    "lab suite": (["lab", "run", "--suite", "nosuch"], "nosuch"),
    "lab scenario": (["lab", "run", "--scenario", "{folder}/missing.toml"], "missing.toml"),
    "lab cpu shares": (["lab", "run", "--suite", "quick", "--cpu-shares", "1"], "--cpu-shares"),
    "lab f1 floor": (["lab", "run", "--suite", "quick", "--f1-floor", "2"], "--f1-floor"),
    "lab output folder": (["lab", "run", "--suite", "quick", "--out", "/proc/no-reveal-here"], "--out"),
    "lab rescore run": (["lab", "rescore", "{folder}/nope"], "nope"),
    "lab rescore jobs": (["lab", "rescore", "{folder}", "--jobs", "0"], "--jobs"),
    "lab score run": (["lab", "score", "{folder}/nope"], "nope"),
    "lab ingest run": (["lab", "ingest", "{folder}/nope"], "nope"),
}


def test_the_sweep_covers_every_command_with_at_least_40_cases():
    from reveal.cli import build_parser

    commands = next(a.choices for a in build_parser()._actions if a.dest == "command")
    swept = {next(a for a in args if a in commands) for args, _ in CASES.values() if set(args) & set(commands)}
    assert len(CASES) >= 40 and set(commands) == swept, set(commands) - swept


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
    config.write_text("[run]\nrisk = 0\n")
    result = reveal("run", "--config", str(config), "--duration", "5", cwd=tmp_path)
    assert result.returncode == 2 and "risk" in result.stderr and "above 0" in result.stderr
    assert not (tmp_path / "reveal-data").exists()


def test_invalid_duration_names_the_option_and_the_accepted_forms():
    result = reveal("run", "--duration", "soon")
    assert result.returncode == 2
    assert "--duration" in result.stderr and "examples: 20, 2.5, 90s, 5m, 1h" in result.stderr


@pytest.mark.parametrize("text, seconds", [("20", 20.0), ("2.5", 2.5), ("90s", 90.0), ("5m", 300.0), ("1H", 3600.0),
                                           ("7d", 604800.0)])
def test_a_duration_reads_in_seconds_whatever_its_unit(text, seconds):
    assert positive_seconds(text) == seconds


def test_addresses_settle_times_and_output_files_read_as_meant(tmp_path):
    assert listen_address("[::1]:0") == ("::1", 0) and listen_address("0.0.0.0:9931") == ("0.0.0.0", 9931)
    assert bootstrap_servers("a:9092, b:9093") == "a:9092, b:9093"
    assert settle_seconds("0") == 0.0 and settle_seconds("2m") == 120.0
    with pytest.raises(argparse.ArgumentTypeError, match="more than an hour"):
        settle_seconds("2h")
    assert publish_every_seconds("0") == 0.0 and publish_every_seconds("0.5") == 0.5
    with pytest.raises(argparse.ArgumentTypeError, match="more than 10 s"):
        publish_every_seconds("1m")
    with pytest.raises(argparse.ArgumentTypeError, match="negative"):
        publish_every_seconds("-1")
    with pytest.raises(argparse.ArgumentTypeError, match="is a folder, not a file"):
        output_file()(str(tmp_path))
    assert output_file(".avro")(str(tmp_path / "x.AVRO")) == str(tmp_path / "x.AVRO")
