"""The report as one self-contained HTML page: inline CSS and SVG, no scripts, nothing fetched.

Each section draws one of the paper's figures from `ReportData`; a section without data is a one-line note. Every
string that comes from the data is escaped here or in `svg`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from html import escape

from schemas.channels import HOST_SUBSYSTEMS
from reveal.report.contents import ChannelTrace, CrossHost, ReportData
from reveal.report.data import ScoreSeries
from reveal.report.series import bucket_ns, merge_intervals, wants_log_scale
from reveal.report.svg import (ANOMALY_COLOUR, SERIES_COLOURS, THRESHOLD_COLOUR, TRUTH_COLOUR, Band, CauseCell,
                                    Line, Marks, Panel, cause_map, colour_of, format_time, format_value,
                                    time_series_panel)

DETECTOR_ORDER = ("zscore", "mahalanobis", "isolation_forest")
DETECTOR_TITLES = {"zscore": "Z-score", "mahalanobis": "Mahalanobis in PCA", "isolation_forest": "Isolation Forest",
                   "severity": "ensemble severity"}
DETECTOR_COLOURS = {"zscore": "#0072B2", "mahalanobis": "#009E73", "isolation_forest": "#CC79A7",
                    "severity": "#000000"}
MAX_HOSTS = 12
MAX_TABLE_ROWS = 100
MAX_LISTED_HOSTS = 30
TRUTH_LABEL = "injected fault (ground truth)"

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1a1a1a; margin: 0;
       background: #fafafa; }
main { max-width: 1140px; margin: 0 auto; padding: 24px 20px 60px; background: #fff; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 36px 0 6px; padding-top: 10px; border-top: 1px solid #ddd; }
h3 { font-size: 15px; margin: 18px 0 4px; }
p.lead { color: #444; margin: 2px 0 12px; }
p.note { color: #666; font-style: italic; }
nav a { margin-right: 14px; color: #0b5394; text-decoration: none; }
figure { margin: 10px 0 18px; }
figcaption { font-size: 13px; color: #333; margin: 0 0 4px; }
svg.chart { display: block; max-width: 100%; height: auto; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 10px; }
th, td { border-bottom: 1px solid #e3e3e3; padding: 4px 8px; text-align: left; vertical-align: top;
         white-space: nowrap; }
td.prose { white-space: normal; min-width: 260px; }
div.scroll { overflow-x: auto; }
th { background: #f0f0f0; }
tr:nth-child(even) td { background: #fafafa; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 3px 14px; font-size: 14px; }
dl.facts dt { color: #555; }
dl.facts dd { margin: 0; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 5px; border-radius: 2px; }
"""

SECTIONS = (("summary", "Summary"), ("timelines", "Anomaly timelines"), ("causes", "Cause map"),
            ("traces", "Raw traces"), ("cross-host", "Cross-host comparison"), ("incidents", "Incidents"),
            ("lab", "Lab ground truth and scores"))


def render_report(data: ReportData) -> str:
    """The whole page for one report."""
    truth = _truth_bands(data)
    sections = [_summary(data), _timelines(data, truth), _causes(data), _traces(data, truth),
                _cross_host(data), _incidents(data), _lab(data)]
    nav = "".join(f'<a href="#{key}">{title}</a>' for key, title in SECTIONS)
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>Reveal report — {escape(data.source)}</title><style>{STYLE}</style></head>'
            f'<body><main><h1>Reveal report</h1><nav>{nav}</nav>{"".join(sections)}</main></body></html>\n')


def _section(key: str, lead: str, body: str) -> str:
    title = dict(SECTIONS)[key]
    return f'<section id="{key}"><h2>{title}</h2><p class="lead">{lead}</p>{body}</section>'


def _note(text: str) -> str:
    return f'<p class="note">{escape(text)}</p>'


def _figure(caption: str, charts: list[str]) -> str:
    return f'<figure><figcaption>{caption}</figcaption>{"".join(charts)}</figure>'


def _summary(data: ReportData) -> str:
    span = "no windows or frames in scope"
    if data.span:
        first, last = data.span
        span = f"{format_time(first)} – {format_time(last)} UTC ({format_duration((last - first) / 1e9)})"
    facts = [("data source", escape(data.source)), ("database", escape(data.database)), ("time span", span),
             ("hosts", _host_list(data.hosts)), ("stored rows", _counts(data)),
             ("incidents", f"{len(data.incidents)} (from alerts)")]
    facts += _scope_facts(data)
    rows = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in facts)
    return _section("summary", "Where the data came from and how much of it there is.",
                    f'<dl class="facts">{rows}</dl>')


def format_duration(seconds: float) -> str:
    """A span in the largest units that fit.

    >>> format_duration(42), format_duration(3725), format_duration(200_000)
    ('42 s', '1 h 2 min', '2 d 7 h')
    """
    units = (("d", 86_400), ("h", 3_600), ("min", 60), ("s", 1))
    for index, (name, size) in enumerate(units[:-1]):
        if seconds >= size:
            smaller, smaller_size = units[index + 1]
            return f"{int(seconds // size)} {name} {int(seconds % size // smaller_size)} {smaller}"
    return f"{seconds:.0f} s"


def _host_list(hosts: tuple[str, ...]) -> str:
    if not hosts:
        return "none"
    shown = ", ".join(escape(h) for h in hosts[:MAX_LISTED_HOSTS])
    more = len(hosts) - MAX_LISTED_HOSTS
    return f"{len(hosts)}: {shown}" + (f" … ({more} more not shown)" if more > 0 else "")


def _counts(data: ReportData) -> str:
    return ", ".join(f"{n:,} {table.replace('_', ' ')}" for table, n in data.counts.items())


def _scope_facts(data: ReportData) -> list[tuple[str, str]]:
    facts = []
    if data.scope.since_ns:
        facts.append(("since", f"{format_time(data.scope.since_ns)} UTC"))
    if data.scope.hosts:
        facts.append(("hosts asked for", ", ".join(escape(h) for h in data.scope.hosts)))
    return facts


def _truth_bands(data: ReportData) -> dict[str, list[Band]]:
    bands: dict[str, list[Band]] = defaultdict(list)
    for fault in data.faults:
        bands[fault.host].append(Band(fault.start_ns, fault.end_ns, TRUTH_COLOUR, TRUTH_LABEL, 0.9, strip=True))
    return bands


def _shown_hosts(data: ReportData, hosts: list[str]) -> tuple[list[str], str]:
    """At most MAX_HOSTS hosts, the most anomalous first, and a note about the rest."""
    ranked = sorted(hosts, key=lambda h: (-len(data.anomalous.get(h, [])), h))
    left_out = len(ranked) - MAX_HOSTS
    return sorted(ranked[:MAX_HOSTS]), _note(f"{left_out} more hosts not shown.") if left_out > 0 else ""


def _timelines(data: ReportData, truth: dict[str, list[Band]]) -> str:
    lead = ("Each detector's score per window against its threshold (dashed); dots mark the windows it flagged, "
            "and a yellow bar along the bottom marks a lab run's injected faults. Long runs are bucketed: each point "
            "is the bucket's highest score (paper Fig. 2).")
    by_host: dict[str, list[ScoreSeries]] = defaultdict(list)
    for series in data.score_series:
        by_host[series.host].append(series)
    if not by_host:
        return _section("timelines", lead, _note("No scored windows in scope: no engine has run over this data, or "
                                                 "it has not finished learning a baseline."))
    hosts, more = _shown_hosts(data, list(by_host))
    figures = [_figure(f"Host <b>{escape(host)}</b>", _host_timeline(data, by_host[host], truth)) for host in hosts]
    return _section("timelines", lead, "".join(figures) + more)


def _host_timeline(data: ReportData, series: list[ScoreSeries], truth: dict[str, list[Band]]) -> list[str]:
    """One panel per detector, then the ensemble; only the last panel names the time axis."""
    ordered = _ordered(series)
    return [time_series_panel(_score_panel(data, item, truth, last=index == len(ordered) - 1))
            for index, item in enumerate(ordered)]


def _ordered(series: list[ScoreSeries]) -> list[ScoreSeries]:
    rank = {name: index for index, name in enumerate((*DETECTOR_ORDER, "severity"))}
    return sorted(series, key=lambda s: (rank.get(s.detector, len(DETECTOR_ORDER)), s.detector))


def _score_panel(data: ReportData, series: ScoreSeries, truth: dict[str, list[Band]], last: bool) -> Panel:
    name = DETECTOR_TITLES.get(series.detector, series.detector)
    flagged = [(t, s) for t, s, f in zip(series.times_ns, series.scores, series.flagged) if f]
    return Panel(
        f"{series.host} · {name}", "score", data.span,
        lines=(Line(name, series.times_ns, series.scores, DETECTOR_COLOURS.get(series.detector, "#555555")),
               Line("threshold", series.times_ns, series.thresholds, THRESHOLD_COLOUR, dashed=True)),
        marks=(Marks("flagged", [t for t, _ in flagged], [s for _, s in flagged]),),
        bands=tuple(truth.get(series.host, ())), log_y=wants_log_scale([*series.scores, *series.thresholds]),
        height=160 if last else 142, time_caption=last)


def _causes(data: ReportData) -> str:
    lead = ("Anomalous windows per host over time, one row per subsystem: a window lights every subsystem its "
            "evidence implicates, so one window can show several causes at once (paper Fig. 3).")
    cells = _cause_cells(data)
    if not cells:
        return _section("causes", lead, _note("No anomalous windows in scope."))
    hosts, more = _shown_hosts(data, list(cells))
    found = {cell.subsystem for host in hosts for cell in cells[host]}
    rows = [*HOST_SUBSYSTEMS, *sorted(found - set(HOST_SUBSYSTEMS))]
    charts = [cause_map(f"{host} · causes of anomalous windows", rows, cells[host], data.span) for host in hosts]
    quiet = sorted(set(data.hosts) - set(cells))
    note = _note("No anomalous windows on " + ", ".join(quiet) + ".") if quiet else ""
    return _section("causes", lead, _figure("Subsystems × time", charts) + note + more)


def _cause_cells(data: ReportData) -> dict[str, list[CauseCell]]:
    """Per host, a cell per subsystem that an anomaly or its evidence channels implicate, touching cells merged."""
    cells: dict[str, list[CauseCell]] = defaultdict(list)
    for slot in data.causes:
        implicated = set(slot.subsystems) | {data.channel_subsystems[(slot.host, channel)] for channel in slot.channels
                                             if (slot.host, channel) in data.channel_subsystems}
        cells[slot.host] += [CauseCell(subsystem, slot.start_ns, slot.end_ns, slot.windows)
                             for subsystem in sorted(implicated) if subsystem]
    return {host: _merged_cells(host_cells, _bucket_width(data)) for host, host_cells in cells.items()}


def _merged_cells(cells: list[CauseCell], gap_ns: int) -> list[CauseCell]:
    """Cells of one subsystem less than `gap_ns` apart become one stretch, their windows summed."""
    merged: list[CauseCell] = []
    for cell in sorted(cells, key=lambda c: (c.subsystem, c.start)):
        last = merged[-1] if merged else None
        if last and last.subsystem == cell.subsystem and cell.start <= last.end + gap_ns:
            merged[-1] = CauseCell(cell.subsystem, last.start, max(last.end, cell.end), last.windows + cell.windows)
        else:
            merged.append(cell)
    return merged


def _bucket_width(data: ReportData) -> int:
    return bucket_ns(*data.span) if data.span else 0


def _anomalous_bands(data: ReportData, host: str, label: str = "anomalous windows") -> list[Band]:
    return [Band(start, end, ANOMALY_COLOUR, label) for start, end in
            merge_intervals(data.anomalous.get(host, []), _bucket_width(data))]


def _traces(data: ReportData, truth: dict[str, list[Band]]) -> str:
    lead = ("The stored values of the channels that appear most often in the anomalies' evidence, with the host's "
            "anomalous windows shaded and a lab run's injected faults as a yellow bar (paper Figs. 7–8). Counters "
            "are drawn as per-second rates.")
    if not data.traces:
        return _section("traces", lead, _note("No implicated channels with stored frames in scope.")
                        + _untraced(data))
    charts = [time_series_panel(_trace_panel(data, item, truth)) for item in data.traces]
    return _section("traces", lead, _figure("Most implicated channels", charts) + _untraced(data))


def _trace_panel(data: ReportData, item: ChannelTrace, truth: dict[str, list[Band]]) -> Panel:
    trace, how = item.trace, item.implicated
    title = (f"{trace.host} · {trace.channel} — in {how.windows} anomalous window{'s' if how.windows != 1 else ''}, "
             f"peak |z| {how.peak_z:.1f}")
    return Panel(title, trace.unit or "value", data.span,
                 lines=(Line(trace.channel, trace.times_ns, trace.values, SERIES_COLOURS[0]),),
                 bands=tuple(_anomalous_bands(data, trace.host) + truth.get(trace.host, [])))


def _untraced(data: ReportData) -> str:
    if not data.untraced:
        return ""
    listed = ", ".join(f"{item.channel} on {item.host} ({item.windows} windows)" for item in data.untraced[:10])
    return _note(f"Evidence without a stored raw channel (derived metrics or peer comparisons): {listed}.")


def _cross_host(data: ReportData) -> str:
    lead = ("The implicated channels on every host side by side: a host that differs from its peers stands out "
            "(paper Fig. 9). The implicated host's anomalous windows are shaded.")
    if len(data.hosts) < 2:
        return _section("cross-host", lead, _note("Fewer than two hosts in scope: nothing to compare."))
    if not data.cross_host:
        return _section("cross-host", lead, _note("No implicated channels with stored frames to compare."))
    charts = [time_series_panel(_cross_host_panel(data, comparison)) for comparison in data.cross_host]
    more = max(c.hosts_left_out for c in data.cross_host)
    return _section("cross-host", lead, _figure("Per-host traces", charts)
                    + (_note(f"{more} more hosts not shown.") if more else ""))


def _cross_host_panel(data: ReportData, comparison: CrossHost) -> Panel:
    """Peers first, the implicated host last so that it is drawn on top; a host keeps its colour on every chart."""
    first, peers = comparison.traces[0], comparison.traces[1:]
    lines = tuple(Line(trace.host, trace.times_ns, trace.values, _host_colour(data, trace.host))
                  for trace in (*peers, first))
    return Panel(f"{comparison.channel} across hosts", first.unit or "value", data.span, lines=lines,
                 bands=tuple(_anomalous_bands(data, first.host, f"anomalous on {first.host}")))


def _host_colour(data: ReportData, host: str) -> str:
    index = data.hosts.index(host) if host in data.hosts else len(data.hosts)
    return SERIES_COLOURS[index % len(SERIES_COLOURS)]


def _table(headers: list[str], rows: list[list[str]], numeric: set[int] = frozenset(),
           prose: set[int] = frozenset()) -> str:
    """A table of already escaped cells; numeric columns align right, prose columns wrap, the others do not."""
    classes = ["number" if i in numeric else "prose" if i in prose else "" for i in range(len(headers))]
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f'<td class="{css}">{cell}</td>' if css else f"<td>{cell}</td>"
                                    for css, cell in zip(classes, row)) + "</tr>" for row in rows)
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _capped(rows: list, limit: int = MAX_TABLE_ROWS) -> tuple[list, str]:
    left_out = len(rows) - limit
    return rows[:limit], _note(f"{left_out} more not shown.") if left_out > 0 else ""


def _incidents(data: ReportData) -> str:
    lead = "Each incident in its latest state (open, update or closed), earliest first."
    if not data.incidents:
        return _section("incidents", lead, _note("No alerts in scope."))
    shown, more = _capped(data.incidents)
    rows = [[escape(i.host), escape(i.kind), escape(i.state), format_time(i.start_ns), _end_time(i.start_ns, i.end_ns),
             f"{i.severity:.3g}", _subsystem(i.subsystem), escape(i.summary), escape(i.hint) or "—"] for i in shown]
    headers = ["host", "kind", "state", "start (UTC)", "end (UTC)", "severity", "subsystem", "summary", "hint"]
    return _section("incidents", lead, _table(headers, rows, {5}, {7, 8}) + more)


def _end_time(start_ns: int, end_ns: int) -> str:
    """The end of an interval, without its date when that is the start's date."""
    start, end = format_time(start_ns), format_time(end_ns)
    return end[11:] if start[:10] == end[:10] else end


def _subsystem(name: str) -> str:
    if not name:
        return "—"
    return f'<span class="swatch" style="background:{colour_of(name)}"></span>{escape(name)}'


def _lab(data: ReportData) -> str:
    lead = ("What a lab run injected (shaded in yellow on the timelines and traces) and how well each thresholds "
            "mode scored against it.")
    if not data.faults and not data.scores:
        return _section("lab", lead, _note("Not a lab run: no ground truth (lab_faults) or scores (lab_scores)."))
    return _section("lab", lead, _faults_table(data) + _scores_tables(data))


def _faults_table(data: ReportData) -> str:
    if not data.faults:
        return _note("No ground truth in scope.")
    shown, more = _capped(data.faults)
    rows = [[escape(f.run_id), escape(f.scenario), escape(f.fault), escape(f.host), format_time(f.start_ns),
             _end_time(f.start_ns, f.end_ns), _subsystem(f.subsystem), format_value(f.magnitude), escape(f.description)]
            for f in shown]
    headers = ["run", "scenario", "fault", "host", "start (UTC)", "end (UTC)", "subsystem", "magnitude",
               "description"]
    return "<h3>Ground truth</h3>" + _table(headers, rows, {7}, {8}) + more


def _scores_tables(data: ReportData) -> str:
    """One table per run: a row per metric, a column per thresholds mode."""
    if not data.scores:
        return _note("No scores stored for this run.")
    runs: dict[tuple[str, str], dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for score in data.scores:
        runs[(score.run_id, score.scenario)][score.metric][score.thresholds] = score.value
    return "".join(_score_table(run_id, scenario, metrics) for (run_id, scenario), metrics in runs.items())


def _score_table(run_id: str, scenario: str, metrics: dict[str, dict[str, float]]) -> str:
    modes = sorted({mode for values in metrics.values() for mode in values})
    rows = [[escape(metric)] + [_score_value(values.get(mode)) for mode in modes]
            for metric, values in sorted(metrics.items())]
    caption = f"<h3>Scores of run {escape(run_id)} ({escape(scenario)})</h3>"
    return caption + _table(["metric", *(f"{mode} thresholds" for mode in modes)], rows,
                            set(range(1, len(modes) + 1)))


def _score_value(value: float | None) -> str:
    """A score to 3 significant digits; '—' where the mode lacks the metric, 'n/a' where it is undefined."""
    if value is None:
        return "—"
    return "n/a" if math.isnan(value) else f"{value:.3g}"
