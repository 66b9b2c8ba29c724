"""`reveal report` over real pipeline output in chDB: every figure present, data escaped, absent sections noted,
the page rendered by headless Chromium, and the command's exit codes."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import sys
import uuid
import zlib
from pathlib import Path

import pytest

from producers.synthetic import StepChange, synthetic_catalog, synthetic_frames
from sinks.clickhouse import ClickHouseWriter, data_dir_dsn
from sinks.landing import ClickHouseLanding
from reveal.cli.report import iso_time
from stream_jobs.embedded import EmbeddedRunner
from stream_jobs.engine.host_pipeline import EngineSettings
from stream_jobs.host_stage import HostStage
from reveal.report.contents import TRACED_CHANNELS, gather
from reveal.report.data import ReportStore, Scope
from reveal.report.page import render_report
from reveal.report.series import MAX_POINTS

REPO = Path(__file__).resolve().parents[3]
T0 = 1_700_000_000_000_000_000
FRAMES_PER_HOST = 1200
HOSTILE_HOST = '<script>alert("host")</script>'
HOSTILE_DESCRIPTION = "<img src=x onerror=alert(1)> flood"
STEPS = {"alpha": (StepChange("cpu.busy.cpu1", 60.0, 25.0),), "beta": (),
         HOSTILE_HOST: (StepChange("net.rx_bytes.eth0", 80.0, 5e6),)}


def write_run(dsn: str, database: str = "reveal") -> None:
    """Three synthetic hosts through the embedded engine into ClickHouse, plus a lab run's truth and scores."""
    writer = ClickHouseWriter(dsn, database)
    runner = EmbeddedRunner(HostStage(EngineSettings(warmup_windows=20)), ClickHouseLanding(writer))
    catalogs = {host: synthetic_catalog(host) for host in STEPS}
    frames = {host: synthetic_frames(catalogs[host], T0, FRAMES_PER_HOST, seed=index, steps=steps)
              for index, (host, steps) in enumerate(STEPS.items())}
    for catalog in catalogs.values():
        runner.on_catalog(catalog)
    for index in range(FRAMES_PER_HOST):
        for host in STEPS:
            runner.on_frame(frames[host][index])
    runner.close()
    writer.add("lab_faults", [
        ["run-1", "cpu-hog", "cpu_contention", "alpha", T0 + 60 * 10**9, T0 + 120 * 10**9, "cpu", 2.0, "2 workers",
         True, '{"cpu_seconds_taken": 110.0}'],
        ["run-1", "cpu-hog", "rx_flood", HOSTILE_HOST, T0 + 80 * 10**9, T0 + 120 * 10**9, "network", 5e6,
         HOSTILE_DESCRIPTION, True, ""]])
    writer.add("lab_scores", [["run-1", "cpu-hog", mode, metric, value] for mode, metric, value in (
        ("calibrated", "precision", 0.91), ("calibrated", "strict_recall", 0.88),
        ("paper", "precision", 0.42), ("paper", "strict_recall", 0.97))])
    writer.close()


@pytest.fixture(scope="module")
def run_database(chdb_dsn) -> str:
    database = f"test_report_{uuid.uuid4().hex[:10]}"
    write_run(chdb_dsn, database)
    return database


@pytest.fixture(scope="module")
def report_html(chdb_dsn, run_database) -> str:
    store = ReportStore(ClickHouseWriter(chdb_dsn, run_database), run_database)
    return render_report(gather(store, chdb_dsn))


def section(html: str, key: str) -> str:
    match = re.search(rf'<section id="{key}">(.*?)</section>', html, re.S)
    assert match, f"section {key} is missing"
    return match.group(1)


def test_every_section_has_its_figure(report_html):
    # the channel watch, three multivariate detectors and the ensemble, per host
    assert section(report_html, "timelines").count("<svg") == 3 * 5
    assert section(report_html, "causes").count("<svg") == 2  # the two hosts with a step change
    traces = section(report_html, "traces")
    assert 2 <= traces.count("<svg") <= TRACED_CHANNELS, "one chart per implicated channel, up to the limit"
    assert "cpu.busy.cpu1" in traces and "net.rx_bytes.eth0" in traces
    assert section(report_html, "cross-host").count("<svg") >= 2
    assert section(report_html, "incidents").count("<tr>") >= 3
    lab = section(report_html, "lab")
    assert "calibrated thresholds" in lab and "paper thresholds" in lab and "0.91" in lab and "0.42" in lab


def test_summary_names_the_source_span_and_counts(report_html, chdb_dsn):
    summary = section(report_html, "summary")
    assert chdb_dsn in summary and "2023-11-14 22:13:20" in summary
    assert "3: &lt;script&gt;" in summary and "alpha, beta" in summary and f"{3 * FRAMES_PER_HOST:,} frames" in summary


def test_flagged_windows_and_ground_truth_are_drawn(report_html):
    timelines = section(report_html, "timelines")
    assert sum(d.count("h0") for d in re.findall(r'class="marks" d="([^"]*)"', timelines)) > 20
    assert "injected fault (ground truth)" in timelines
    assert 'class="band"' in section(report_html, "traces")


def test_cause_map_colours_cells_by_subsystem(report_html):
    causes = section(report_html, "causes")
    assert 'class="cell"' in causes and "#0072B2" in causes and "#E69F00" in causes
    assert "No anomalous windows on beta" in causes


def test_markup_from_the_data_is_escaped(report_html):
    assert "<script" not in report_html and "<img" not in report_html
    assert "&lt;script&gt;alert(&quot;host&quot;)&lt;/script&gt;" in report_html
    assert "&lt;img src=x onerror=alert(1)&gt;" in report_html


def test_traces_are_downsampled(report_html):
    for points in re.findall(r'<polyline[^>]* points="([^"]*)"', report_html):
        assert len(points.split()) <= MAX_POINTS + 2


def test_scope_limits_hosts_and_time(chdb_dsn, run_database):
    since = T0 + 90 * 10**9
    store = ReportStore(ClickHouseWriter(chdb_dsn, run_database), run_database, Scope(since, ("alpha",)))
    data = gather(store, chdb_dsn)
    assert data.hosts == ("alpha",) and data.span[0] >= since - 3 * 10**9
    assert {series.host for series in data.score_series} == {"alpha"}
    assert all(incident.host == "alpha" for incident in data.incidents)
    assert section(render_report(data), "cross-host").count("<svg") == 0


def test_empty_database_notes_every_absent_section(chdb_dsn):
    database = f"test_report_{uuid.uuid4().hex[:10]}"
    html = render_report(gather(ReportStore(ClickHouseWriter(chdb_dsn, database), database), chdb_dsn))
    assert "<svg" not in html
    for key in ("timelines", "causes", "traces", "cross-host", "incidents", "lab"):
        assert '<p class="note">' in section(html, key), key


def chromium_binary() -> str:
    """Headless Chromium; its absence fails the test (bash .ci/run installs it)."""
    found = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")
                  if shutil.which(name)), None)
    if not found:
        pytest.fail("headless Chromium is not installed (apt-get install -y chromium; bash .ci/run does)")
    return found


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    command = [chromium_binary(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={tmp_path / 'profile'}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def png_facts(path: Path) -> tuple[int, int, int]:
    """Width, height and the number of distinct byte values in the decompressed image data."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    chunks, offset = [], 8
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        if kind == b"IDAT":
            chunks.append(data[offset + 8:offset + 8 + length])
        offset += 12 + length
    return width, height, len(set(zlib.decompress(b"".join(chunks))))


def test_chromium_renders_the_figures(report_html, tmp_path):
    page = tmp_path / "report.html"
    page.write_text(report_html, encoding="utf-8")
    dumped = chromium(tmp_path, "--dump-dom", page.as_uri())
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    assert dumped.stdout.count('<svg class="chart"') == report_html.count('<svg class="chart"') >= 18
    for key in ("summary", "timelines", "causes", "traces", "cross-host", "incidents", "lab"):
        assert f'<section id="{key}">' in dumped.stdout
    assert "<script" not in dumped.stdout  # nothing to run, so no script can fail


def test_chromium_screenshot_is_not_blank(report_html, tmp_path):
    page, shot = tmp_path / "report.html", tmp_path / "report.png"
    page.write_text(report_html, encoding="utf-8")
    result = chromium(tmp_path, f"--screenshot={shot}", "--window-size=1400,3000", page.as_uri())
    assert result.returncode == 0 and shot.exists(), result.stderr[-2000:]
    width, height, distinct_bytes = png_facts(shot)
    assert (width, height) == (1400, 3000) and shot.stat().st_size > 50_000 and distinct_bytes > 50


def reveal(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reveal.cli", *args], capture_output=True, text=True,
                          timeout=180, cwd=REPO)


def test_command_writes_the_report(tmp_path):
    data_dir = tmp_path / "data"
    made = subprocess.run([sys.executable, "-c", "import sys; from tests.reveal.report.test_report_command import write_run; "
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


def test_without_a_source_the_report_reads_the_data_folder_of_reveal_run(tmp_path):
    writer = ClickHouseWriter(data_dir_dsn(tmp_path / "reveal-data"))
    writer.add("windows", [["default-folder-host", "c", 1, 0, 3 * 10**9, 30, 1, 0.5, 1.0, 0, [], [], [], [], ""]])
    writer.close()
    written = subprocess.run([sys.executable, "-m", "reveal.cli", "report", "--out", "r.html"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=300)
    assert written.returncode == 0, written.stderr[-2000:]
    assert "default-folder-host" in (tmp_path / "r.html").read_text()
