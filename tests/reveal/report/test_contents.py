"""What `gather` takes from real pipeline output in chDB: a figure for every section, the implicated channels traced
up to the limit and compared across hosts, the summary's source, span and counts, and traces bucketed down."""

from __future__ import annotations

import re

from reveal.report.contents import TRACED_CHANNELS
from reveal.report.series import MAX_POINTS
from tests.reveal.report.stored_run import FRAMES_PER_HOST, section


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


def test_traces_are_downsampled(report_html):
    for points in re.findall(r'<polyline[^>]* points="([^"]*)"', report_html):
        assert len(points.split()) <= MAX_POINTS + 2
