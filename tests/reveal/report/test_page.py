"""The page from records alone (capped tables and host lists, escaped cells, lab scores side by side, no scripts) and
from real pipeline output in chDB: flagged windows, ground truth and causes drawn, markup from the data escaped,
absent sections noted, and the figures rendered by headless Chromium."""

import doctest
import math
import re
import uuid

from reveal.report import page
from reveal.report.contents import ReportData, gather
from schemas.records import Alert
from reveal.report.data import ReportStore, Score, ScoreSeries
from reveal.report.page import MAX_HOSTS, MAX_TABLE_ROWS, render_report
from sinks.clickhouse import ClickHouseWriter
from tests.reveal.chromium import chromium, png_facts
from tests.reveal.report.stored_run import section

T0 = 1_700_000_000_000_000_000
SPAN = (T0, T0 + 100 * 10**9)


def incident(index: int, summary: str = "cpu anomaly", hint: str = "") -> Alert:
    return Alert(f"h:{index}", "h", "c", "closed", T0 + index * 10**9, T0 + (index + 2) * 10**9, 1.5, "cpu", summary,
                 hint, "anomaly")


def series(host: str, flagged: bool = False) -> ScoreSeries:
    times = tuple(T0 + i * 10**9 for i in range(10))
    return ScoreSeries(host, "zscore", times, tuple(float(i) for i in range(10)), (5.0,) * 10, (flagged,) * 10)


def test_docstring_examples_hold():
    assert doctest.testmod(page).failed == 0


def test_long_incident_tables_are_capped_with_a_note():
    data = ReportData("chdb:///x", "reveal", span=SPAN, hosts=("h",),
                      incidents=[incident(i) for i in range(MAX_TABLE_ROWS + 50)])
    page = render_report(data)
    assert page.count("<td>closed</td>") == MAX_TABLE_ROWS and "50 more not shown." in page


def test_many_hosts_show_the_most_anomalous_and_note_the_rest():
    hosts = tuple(f"host-{i:02d}" for i in range(MAX_HOSTS + 3))
    data = ReportData("chdb:///x", "reveal", span=SPAN, hosts=hosts, score_series=[series(h) for h in hosts],
                      anomalous={"host-14": [(T0, T0 + 10**9)]})
    page = render_report(data)
    assert page.count("<figure>") == MAX_HOSTS and "3 more hosts not shown." in page and "host-14" in page


def test_cells_are_escaped_and_the_page_has_no_script():
    data = ReportData("http://u:***@ch:8123", "reveal", span=SPAN, hosts=("h",),
                      incidents=[incident(0, "<b>loss</b> on eth0", "<script>x()</script>")])
    page = render_report(data)
    assert "&lt;b&gt;loss&lt;/b&gt;" in page and "&lt;script&gt;" in page and "<script" not in page


def test_scores_of_each_thresholds_mode_sit_side_by_side():
    scores = [Score("r1", "loss", mode, metric, value) for mode, metric, value in
              (("calibrated", "f1", 0.9), ("paper", "f1", 0.5), ("calibrated", "recall", 0.8),
               ("paper", "delay_s", math.nan))]
    page = render_report(ReportData("chdb:///x", "reveal", scores=scores))
    assert ("<th>metric</th><th>calibrated thresholds</th><th>paper thresholds</th>" in page)
    assert '<td>f1</td><td class="number">0.9</td><td class="number">0.5</td>' in page
    assert '<td>recall</td><td class="number">0.8</td><td class="number">—</td>' in page
    assert '<td>delay_s</td><td class="number">—</td><td class="number">n/a</td>' in page
    assert "No ground truth in scope." in page


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


def test_empty_database_notes_every_absent_section(chdb_dsn):
    database = f"test_report_{uuid.uuid4().hex[:10]}"
    html = render_report(gather(ReportStore(ClickHouseWriter(chdb_dsn, database), database), chdb_dsn))
    assert "<svg" not in html
    for key in ("timelines", "causes", "traces", "cross-host", "incidents", "lab"):
        assert '<p class="note">' in section(html, key), key


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
