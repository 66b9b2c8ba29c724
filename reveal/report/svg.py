"""Pure SVG charts for the report: time-series panels (paper Figs. 2, 7–9) and the cause map (Fig. 3).

Every function takes plain numbers and labels and returns an SVG string; every label is escaped here, so data from
hosts (names, channels) can never become markup.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from html import escape
from typing import Sequence

WIDTH = 1100
PANEL_HEIGHT = 190
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 78, 16, 40, 44
FONT = 'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif"'
TIME_STEPS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)

SUBSYSTEM_COLOURS = {"cpu": "#0072B2", "gpu": "#009E73", "memory": "#CC79A7", "network": "#E69F00",
                     "storage": "#8C6D31", "agent": "#7F7F7F"}
SERIES_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#8C6D31", "#000000")
ANOMALY_COLOUR = "#D55E00"
TRUTH_COLOUR = "#E6C200"
THRESHOLD_COLOUR = "#333333"


@dataclass(frozen=True)
class Line:
    """One polyline: x in ns since the epoch, y in the chart's unit; NaN breaks the line."""

    label: str
    xs: Sequence[float]
    ys: Sequence[float]
    colour: str
    dashed: bool = False


@dataclass(frozen=True)
class Marks:
    """Points drawn as dots on top of the lines, e.g. windows a detector flagged."""

    label: str
    xs: Sequence[float]
    ys: Sequence[float]
    colour: str = ANOMALY_COLOUR


@dataclass(frozen=True)
class Band:
    """A shaded time interval across the whole plot height (an anomalous stretch, an injected fault)."""

    start: float
    end: float
    colour: str
    label: str
    opacity: float = 0.18
    strip: bool = False


@dataclass(frozen=True)
class Panel:
    """One time-series chart: title, y-axis label, shared x range (ns) and what to draw."""

    title: str
    y_label: str
    x_range: tuple[float, float]
    lines: tuple[Line, ...] = ()
    marks: tuple[Marks, ...] = ()
    bands: tuple[Band, ...] = ()
    log_y: bool = False
    height: int = PANEL_HEIGHT
    time_caption: bool = True


@dataclass(frozen=True)
class CauseCell:
    """One stretch of anomalous windows on a host, implicating one subsystem."""

    subsystem: str
    start: float
    end: float
    windows: int = 1


@dataclass(frozen=True)
class _Frame:
    """Pixel geometry of a plot area and the data ranges it maps."""

    x_range: tuple[float, float]
    y_range: tuple[float, float]
    width: int
    height: int
    log_y: bool = False
    left: int = MARGIN_LEFT
    top: int = MARGIN_TOP
    bottom: int = MARGIN_BOTTOM

    @property
    def plot_width(self) -> float:
        return self.width - self.left - MARGIN_RIGHT

    @property
    def plot_height(self) -> float:
        return self.height - self.top - self.bottom

    def x(self, value: float) -> float:
        """Pixel column of a time, clamped to the plot area."""
        low, high = self.x_range
        share = (value - low) / ((high - low) or 1.0)
        return self.left + min(max(share, 0.0), 1.0) * self.plot_width

    def y(self, value: float) -> float:
        """Pixel row of a value, clamped to the plot area."""
        low, high = (_log10(v) for v in self.y_range) if self.log_y else self.y_range
        value = _log10(value) if self.log_y else value
        share = (value - low) / ((high - low) or 1.0)
        return self.top + self.plot_height - min(max(share, 0.0), 1.0) * self.plot_height


@dataclass
class _Legend:
    entries: list[tuple[str, str]] = field(default_factory=list)

    def add(self, label: str, swatch: str) -> None:
        if label and all(label != existing for existing, _ in self.entries):
            self.entries.append((label, swatch))


def time_series_panel(panel: Panel, width: int = WIDTH) -> str:
    """One chart with bands, lines, threshold lines and marks, a time axis, a y axis and a legend."""
    bottom = MARGIN_BOTTOM if panel.time_caption else MARGIN_BOTTOM - 18
    frame = _Frame(panel.x_range, _y_range(panel), width, panel.height, panel.log_y, bottom=bottom)
    legend = _Legend()
    body = [_band(frame, band, legend) for band in panel.bands]
    body += [_polyline(frame, line, legend) for line in panel.lines]
    body += [_marks(frame, marks, legend) for marks in panel.marks]
    return _svg(width, panel.height, panel.title, [
        _y_axis(frame, panel.y_label), _time_axis(frame, panel.time_caption), *body,
        _title(panel.title), _legend(legend, width)])


def cause_map(title: str, subsystems: Sequence[str], cells: Sequence[CauseCell], x_range: tuple[float, float],
              width: int = WIDTH) -> str:
    """Subsystems (rows) × time: one coloured cell per anomalous stretch, in its subsystem's colour (paper Fig. 3)."""
    row_height = 22
    height = MARGIN_TOP + MARGIN_BOTTOM + row_height * len(subsystems)
    frame = _Frame(x_range, (0.0, 1.0), width, height, left=MARGIN_LEFT + 20)
    legend = _Legend()
    rows = [_cause_row(frame, index, name, row_height) for index, name in enumerate(subsystems)]
    placed = sorted(((subsystems.index(cell.subsystem), cell) for cell in cells if cell.subsystem in subsystems),
                    key=lambda pair: pair[0])
    cells_svg = [_cause_cell(frame, cell, row, row_height, legend) for row, cell in placed]
    axis = _time_axis(frame)
    return _svg(width, height, title, [*rows, *cells_svg, axis, _title(title), _legend(legend, width)])


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high].

    >>> nice_ticks(0, 10)
    [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    """
    if not high > low:
        return [low]
    span = high - low
    magnitude = 10.0 ** math.floor(math.log10(span / count))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if span / (m * magnitude) <= count + 1)
    first = math.ceil(low / step - 1e-9)
    return [round((first + i) * step, 12) for i in range(int((high - low) / step + 1e-9) + 1)
            if (first + i) * step <= high + step * 1e-9]


def log_ticks(low: float, high: float) -> list[float]:
    """Powers of ten covering [low, high] (both > 0).

    >>> log_ticks(0.5, 150)
    [1.0, 10.0, 100.0]
    """
    return [10.0 ** p for p in range(math.ceil(_log10(low) - 1e-9), math.floor(_log10(high) + 1e-9) + 1)]


def time_ticks(start_ns: float, end_ns: float, count: int = 7) -> list[tuple[float, str]]:
    """Tick positions (ns) on round UTC seconds, minutes or hours, with HH:MM:SS or HH:MM labels.

    >>> time_ticks(0, 30e9, 3)
    [(0.0, '00:00:00'), (10000000000.0, '00:00:10'), (20000000000.0, '00:00:20'), (30000000000.0, '00:00:30')]
    """
    span_s = max((end_ns - start_ns) / 1e9, 1e-9)
    step_s = next((s for s in TIME_STEPS_S if span_s / s <= count), TIME_STEPS_S[-1])
    first = math.ceil(start_ns / 1e9 / step_s) * step_s
    pattern = "%H:%M:%S" if step_s < 60 else "%H:%M"
    ticks, at = [], first
    while at * 1e9 <= end_ns:
        ticks.append((at * 1e9, datetime.fromtimestamp(at, timezone.utc).strftime(pattern)))
        at += step_s
    return ticks


def format_value(value: float) -> str:
    """A short tick label: 3 significant digits with k/M/G/T suffixes.

    >>> format_value(1_250_000), format_value(0.25), format_value(40)
    ('1.25M', '0.25', '40')
    """
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    for scale, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


def format_time(ns: float) -> str:
    """UTC date and time of an instant in ns, to the second."""
    return datetime.fromtimestamp(ns / 1e9, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def colour_of(subsystem: str) -> str:
    return SUBSYSTEM_COLOURS.get(subsystem, "#555555")


def _log10(value: float) -> float:
    return math.log10(max(value, 1e-12))


def _finite_values(panel: Panel) -> list[float]:
    values = [y for series in (*panel.lines, *panel.marks) for y in series.ys if math.isfinite(y)]
    return [v for v in values if v > 0] if panel.log_y else values


def _y_range(panel: Panel) -> tuple[float, float]:
    values = _finite_values(panel)
    if not values:
        return (1.0, 10.0) if panel.log_y else (0.0, 1.0)
    low, high = min(values), max(values)
    if panel.log_y:
        return 10 ** math.floor(_log10(low)), 10 ** math.ceil(_log10(high) + 1e-9)
    pad = (high - low) * 0.06 or abs(high) * 0.1 or 1.0
    return low - pad, high + pad


def _svg(width: int, height: int, title: str, parts: list[str]) -> str:
    return (f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" {FONT} font-size="12">'
            + "".join(parts) + "</svg>")


def _title(text: str) -> str:
    return f'<text x="{MARGIN_LEFT}" y="16" font-size="14" font-weight="600" fill="#111">{escape(text)}</text>'


def _y_axis(frame: _Frame, label: str) -> str:
    count = max(2, int(frame.plot_height // 24))  # a label every 24 px or more stays readable
    ticks = log_ticks(*frame.y_range) if frame.log_y else nice_ticks(*frame.y_range, count)
    right = frame.left + frame.plot_width
    parts = [f'<line x1="{frame.left}" y1="{frame.y(t):.1f}" x2="{right:.1f}" y2="{frame.y(t):.1f}" stroke="#e3e3e3"/>'
             f'<text x="{frame.left - 6}" y="{frame.y(t) + 4:.1f}" text-anchor="end" fill="#444">{format_value(t)}'
             f'</text>' for t in ticks]
    middle = frame.top + frame.plot_height / 2
    parts.append(f'<text transform="translate(16 {middle:.1f}) rotate(-90)" text-anchor="middle" fill="#222">'
                 f'{escape(label)}</text>')
    parts.append(f'<rect x="{frame.left}" y="{frame.top}" width="{frame.plot_width:.1f}" '
                 f'height="{frame.plot_height:.1f}" fill="none" stroke="#999"/>')
    return "".join(parts)


def _time_axis(frame: _Frame, caption: bool = True) -> str:
    """Ticks on round UTC times, and below them (unless another chart of the figure has it) what the axis is."""
    bottom = frame.top + frame.plot_height
    parts = [f'<line x1="{frame.x(at):.1f}" y1="{bottom}" x2="{frame.x(at):.1f}" y2="{bottom + 5}" stroke="#666"/>'
             f'<text x="{frame.x(at):.1f}" y="{bottom + 18}" text-anchor="middle" fill="#444">{label}</text>'
             for at, label in time_ticks(*frame.x_range)]
    if not caption:
        return "".join(parts)
    caption = f"time (UTC) from {format_time(frame.x_range[0])}"
    parts.append(f'<text x="{frame.left + frame.plot_width / 2:.1f}" y="{bottom + 36}" text-anchor="middle" '
                 f'fill="#222">{caption}</text>')
    return "".join(parts)


def _points(frame: _Frame, xs: Sequence[float], ys: Sequence[float]) -> list[list[str]]:
    """Pixel coordinates grouped into runs of finite values (a NaN starts a new run)."""
    runs, current = [], []
    for x, y in zip(xs, ys):
        if math.isfinite(y) and (not frame.log_y or y > 0):
            current.append((f"{frame.x(x):.1f}", f"{frame.y(y):.1f}"))
        elif current:
            runs.append(current)
            current = []
    runs = [*runs, current] if current else runs
    return [[f"{x},{y}" for x, y in _without_flat_interior(run)] for run in runs]


def _without_flat_interior(run: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Points inside a horizontal stretch (a constant threshold) add nothing to the drawing: keep its ends only."""
    last = len(run) - 1
    return [point for index, point in enumerate(run)
            if index in (0, last) or not run[index - 1][1] == point[1] == run[index + 1][1]]


def _polyline(frame: _Frame, line: Line, legend: _Legend) -> str:
    dash = ' stroke-dasharray="6 4"' if line.dashed else ""
    legend.add(line.label, f'<line x1="0" y1="0" x2="18" y2="0" stroke="{line.colour}" stroke-width="2"{dash}/>')
    return "".join(f'<polyline class="series" fill="none" stroke="{line.colour}" stroke-width="1.5"{dash} '
                   f'points="{" ".join(run)}"><title>{escape(line.label)}</title></polyline>'
                   for run in _points(frame, line.xs, line.ys))


def _marks(frame: _Frame, marks: Marks, legend: _Legend) -> str:
    """All dots in one path of zero-length round-capped segments: a few bytes per dot."""
    legend.add(marks.label, f'<circle cx="9" cy="0" r="3.5" fill="{marks.colour}"/>')
    dots = "".join(f"M{frame.x(x):.1f} {frame.y(y):.1f}h0" for x, y in zip(marks.xs, marks.ys) if math.isfinite(y))
    if not dots:
        return ""
    return (f'<path class="marks" d="{dots}" fill="none" stroke="{marks.colour}" stroke-width="6" '
            f'stroke-linecap="round"/>')


def _band(frame: _Frame, band: Band, legend: _Legend) -> str:
    legend.add(band.label, f'<rect x="0" y="-6" width="18" height="12" fill="{band.colour}" '
                           f'fill-opacity="{band.opacity * 2:.2f}"/>')
    left, right = frame.x(band.start), frame.x(band.end)
    top, height = (frame.top + frame.plot_height - 8, 8) if band.strip else (frame.top, frame.plot_height)
    return (f'<rect class="band" x="{left:.1f}" y="{top:.1f}" width="{max(right - left, 1.5):.1f}" '
            f'height="{height:.1f}" fill="{band.colour}" fill-opacity="{band.opacity}">'
            f'<title>{escape(band.label)}: {format_time(band.start)} – {format_time(band.end)}</title></rect>')


def _legend(legend: _Legend, width: int) -> str:
    """Legend entries right-aligned on the title line, widths estimated from the label length."""
    sizes = [30 + 7 * len(label) for label, _ in legend.entries]
    x = width - MARGIN_RIGHT - sum(sizes)
    parts = []
    for (label, swatch), size in zip(legend.entries, sizes):
        parts.append(f'<g transform="translate({x:.0f} 30)">{swatch}<text x="24" y="4" fill="#222">'
                     f'{escape(label)}</text></g>')
        x += size
    return "".join(parts)


def _cause_row(frame: _Frame, index: int, name: str, row_height: int) -> str:
    top = frame.top + index * row_height
    shade = "#f6f6f6" if index % 2 == 0 else "#ffffff"
    return (f'<rect x="{frame.left}" y="{top}" width="{frame.plot_width:.1f}" height="{row_height}" fill="{shade}" '
            f'stroke="#e3e3e3"/><text x="{frame.left - 8}" y="{top + row_height / 2 + 4:.1f}" text-anchor="end" '
            f'fill="#222">{escape(name)}</text>')


def _cause_cell(frame: _Frame, cell: CauseCell, row: int, row_height: int, legend: _Legend) -> str:
    colour = colour_of(cell.subsystem)
    legend.add(cell.subsystem, f'<rect x="0" y="-6" width="18" height="12" fill="{colour}"/>')
    left, right = frame.x(cell.start), frame.x(cell.end)
    top = frame.top + row * row_height + 3
    return (f'<rect class="cell" x="{left:.1f}" y="{top}" width="{max(right - left, 2.0):.1f}" '
            f'height="{row_height - 6}" fill="{colour}"><title>{escape(cell.subsystem)}: {cell.windows} '
            f'window(s), {format_time(cell.start)} – {format_time(cell.end)}</title></rect>')
