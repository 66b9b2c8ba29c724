"""The page from records alone: capped tables and host lists, escaped cells, lab scores side by side, no scripts."""

import doctest
import math

from reveal.report import page
from reveal.report.contents import ReportData
from schemas.records import Alert
from reveal.report.data import Score, ScoreSeries
from reveal.report.page import MAX_HOSTS, MAX_TABLE_ROWS, render_report

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
