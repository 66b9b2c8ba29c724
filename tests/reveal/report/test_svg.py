"""The pure chart functions: well-formed SVG, escaped labels, broken lines at gaps, clamped shapes, round ticks."""

import doctest
import math
import xml.etree.ElementTree as ElementTree

from reveal.report import svg
from reveal.report.svg import (Band, CauseCell, Line, Marks, Panel, cause_map, format_value, log_ticks,
                                    nice_ticks, time_series_panel, time_ticks)

SVG = "{http://www.w3.org/2000/svg}"
T0 = 1_700_000_000_000_000_000
SPAN = (T0, T0 + 60 * 10**9)
TIMES = [T0 + i * 10**9 for i in range(61)]


def parsed(markup: str) -> ElementTree.Element:
    return ElementTree.fromstring(markup)


def test_docstring_examples_hold():
    assert doctest.testmod(svg).failed == 0


def test_panel_is_well_formed_with_lines_marks_and_bands():
    panel = Panel("host · Z-score", "score", SPAN,
                  lines=(Line("Z-score", TIMES, [float(i % 7) for i in range(61)], "#0072B2"),
                         Line("threshold", TIMES, [5.0] * 61, "#333333", dashed=True)),
                  marks=(Marks("flagged", TIMES[5:7], [6.0, 0.0]),),
                  bands=(Band(T0 + 10 * 10**9, T0 + 20 * 10**9, "#D55E00", "anomalous windows"),))
    root = parsed(time_series_panel(panel))
    assert root.tag == f"{SVG}svg" and root.get("class") == "chart"
    assert len(root.findall(f".//{SVG}polyline")) == 2
    assert root.find(f".//{SVG}path[@class='marks']").get("d").count("h0") == 2
    assert len(root.findall(f".//{SVG}rect[@class='band']")) == 1
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "score" in texts and "Z-score" in texts and "threshold" in texts and "flagged" in texts
    assert any(text and text.startswith("time (UTC) from 2023-11-14") for text in texts)


def test_labels_from_the_data_are_escaped():
    hostile = '<script>alert("x")</script>'
    markup = time_series_panel(Panel(hostile, hostile, SPAN, lines=(Line(hostile, TIMES, [1.0] * 61, "#000"),)))
    assert "<script" not in markup
    assert any(t.text == hostile for t in parsed(markup).iter(f"{SVG}text"))


def test_a_gap_breaks_the_line_and_nothing_is_drawn_for_it():
    values = [float(i % 2) for i in range(20)] + [math.nan] * 5 + [float(i % 3) for i in range(36)]
    root = parsed(time_series_panel(Panel("gap", "v", SPAN, lines=(Line("v", TIMES, values, "#000"),))))
    runs = [p.get("points").split() for p in root.iter(f"{SVG}polyline")]
    assert [len(run) for run in runs] == [20, 36]


def test_a_flat_stretch_keeps_only_its_ends():
    values = [0.0, 1.0, 1.0, 1.0, 1.0, 0.0]
    root = parsed(time_series_panel(Panel("flat", "v", SPAN, lines=(Line("v", TIMES[:6], values, "#000"),))))
    assert len(root.find(f".//{SVG}polyline").get("points").split()) == 4


def test_shapes_outside_the_range_are_clamped_to_the_plot():
    panel = Panel("clamped", "v", SPAN, lines=(Line("v", TIMES, [1.0] * 61, "#000"),),
                  bands=(Band(T0 - 100 * 10**9, T0 + 500 * 10**9, "#D55E00", "wide"),))
    band = parsed(time_series_panel(panel)).find(f".//{SVG}rect[@class='band']")
    left, width = float(band.get("x")), float(band.get("width"))
    assert left == svg.MARGIN_LEFT and left + width <= svg.WIDTH - svg.MARGIN_RIGHT + 0.1


def test_log_scale_uses_powers_of_ten():
    panel = Panel("log", "score", SPAN, lines=(Line("v", TIMES, [0.5] + [400.0] * 60, "#000"),), log_y=True)
    texts = {t.text for t in parsed(time_series_panel(panel)).iter(f"{SVG}text")}
    assert {"1", "10", "100"} <= texts


def test_empty_panel_still_has_axes():
    root = parsed(time_series_panel(Panel("nothing", "v", SPAN)))
    assert root.find(f".//{SVG}polyline") is None and len(list(root.iter(f"{SVG}text"))) > 3


def test_cause_map_has_a_row_per_subsystem_and_a_cell_per_stretch():
    cells = [CauseCell("cpu", T0, T0 + 3 * 10**9, 1), CauseCell("network", T0 + 10**9, T0 + 4 * 10**9, 2),
             CauseCell("unknown", T0, T0 + 10**9)]
    root = parsed(cause_map("h · causes", ("cpu", "gpu", "memory", "network", "storage"), cells, SPAN))
    drawn = root.findall(f".//{SVG}rect[@class='cell']")
    assert [cell.get("fill") for cell in drawn] == [svg.SUBSYSTEM_COLOURS["cpu"], svg.SUBSYSTEM_COLOURS["network"]]
    assert {"cpu", "gpu", "memory", "network", "storage"} <= {t.text for t in root.iter(f"{SVG}text")}


def test_ticks_are_round():
    assert nice_ticks(0.3, 2.9) == [0.5, 1.0, 1.5, 2.0, 2.5]
    assert nice_ticks(5.0, 5.0) == [5.0]
    assert log_ticks(0.02, 3000) == [0.1, 1.0, 10.0, 100.0, 1000.0]
    ticks = time_ticks(T0, T0 + 3600 * 10**9)
    assert 3 <= len(ticks) <= 8 and [label for _, label in ticks][:2] == ["22:20", "22:30"]
    assert format_value(6_000_000) == "6M" and format_value(-2500) == "-2.5k"
