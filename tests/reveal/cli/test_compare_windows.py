"""`reveal compare-windows`: the agreement of two runs' flagged windows per shared host and overall, hosts of one run
only named and left out, JSON on request, and runs without a shared host refused."""

import argparse
import json

import pytest

from reveal.cli import CommandError
from reveal.cli.compare_windows import handle

HEADER = "host,window_start,window_end,flagged\n"


def windows(path, *rows: str):
    path.write_text(HEADER + "".join(f"{row}\n" for row in rows))
    return str(path)


def compare(run_a: str, run_b: str, as_json: bool = False) -> int:
    return handle(argparse.Namespace(run_a=run_a, run_b=run_b, json=as_json))


def test_shared_hosts_get_their_figures_and_the_others_are_named(tmp_path, capsys):
    a = windows(tmp_path / "a.csv", "h1,2026-01-01T00:00:00,2026-01-01T00:00:03,1",
                "h2,2026-01-01T00:00:00,2026-01-01T00:00:03,1")
    b = windows(tmp_path / "b.csv", "h1,2026-01-01T00:00:00,2026-01-01T00:00:03,1")
    assert compare(a, b) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert header.split() == ["host", "IoU", "hit", "A→B", "hit", "B→A", "len", "A→B", "len", "B→A"]
    assert rows[0].split() == ["h2", "only", "in", "A:", "not", "compared"]
    assert rows[1].split() == ["h1", "1.00", "1.00", "1.00", "1.00", "1.00"]
    assert rows[2].split()[:2] == ["overall", "0.50"] and len(rows) == 3
    assert compare(a, b, as_json=True) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["hosts"]["h1"]["iou"] == 1.0 and figures["hosts_only_in_a"] == ["h2"]


def test_runs_without_a_shared_host_are_refused(tmp_path):
    a = windows(tmp_path / "a.csv", "only-a,2026-01-01T00:00:00,2026-01-01T00:00:03,1")
    b = windows(tmp_path / "b.csv", "only-b,2026-01-01T00:00:00,2026-01-01T00:00:03,1")
    with pytest.raises(CommandError, match="share no host"):
        compare(a, b)
