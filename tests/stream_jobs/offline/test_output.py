import csv
import json
from datetime import datetime, timedelta, timezone

import pytest

from stream_jobs.offline.output import format_time_ns, write_windows

T0_NS = 1_700_000_000_000_000_000
TRICKY_CLAIM = 'cpu.busy rose 3.2σ, "sustained"\nthen fell; see irq.total'


def window_row(**overrides):
    row = {"host": "node-1", "window_start": T0_NS, "window_end": T0_NS + 3_000_000_000,
           "score_zscore": 4.5, "score_mahalanobis": 1.25, "score": 4.5, "flagged": True,
           "detectors": ("zscore",), "subsystem": "cpu", "claim": TRICKY_CLAIM,
           "ranked_metrics": ["cpu.busy.cpu0", "irq.total"]}
    return row | overrides


EXPECTED_COLUMNS = ["host", "window_start", "window_end", "score_zscore", "score_mahalanobis", "score", "flagged",
                    "detectors", "subsystem", "claim", "ranked_metrics"]


def test_csv_columns_come_in_the_documented_order(tmp_path):
    shuffled = dict(reversed(list(window_row().items())))
    write_windows(tmp_path / "out.csv", [shuffled])
    header = (tmp_path / "out.csv").read_text().splitlines()[0]
    assert header.split(",") == ["host", "window_start", "window_end", "score_mahalanobis", "score_zscore",
                                 "score", "flagged", "detectors", "subsystem", "claim", "ranked_metrics"]


def test_csv_round_trips_a_claim_with_commas_quotes_and_newlines(tmp_path):
    write_windows(tmp_path / "out.csv", [window_row(), window_row(flagged=False, claim="", detectors=())])
    with open(tmp_path / "out.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == EXPECTED_COLUMNS
    assert rows[0] == {"host": "node-1", "window_start": "2023-11-14T22:13:20.000Z",
                       "window_end": "2023-11-14T22:13:23.000Z", "score_zscore": "4.5",
                       "score_mahalanobis": "1.25", "score": "4.5", "flagged": "1", "detectors": "zscore",
                       "subsystem": "cpu", "claim": TRICKY_CLAIM, "ranked_metrics": "cpu.busy.cpu0;irq.total"}
    assert rows[1]["flagged"] == "0" and rows[1]["claim"] == "" and rows[1]["detectors"] == ""


def test_json_lines_keep_the_column_order_and_escape_strings(tmp_path):
    write_windows(tmp_path / "out.jsonl", [window_row(), window_row(score=float("nan"), flagged=0)])
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert list(first) == EXPECTED_COLUMNS
    assert first["claim"] == TRICKY_CLAIM and first["flagged"] == 1 and first["score_zscore"] == 4.5
    assert first["detectors"] == "zscore" and first["ranked_metrics"] == "cpu.busy.cpu0;irq.total"
    assert second["score"] is None and second["flagged"] == 0


def test_several_detectors_are_joined(tmp_path):
    write_windows(tmp_path / "out.csv", [window_row(detectors=["zscore", "mahalanobis"])])
    with open(tmp_path / "out.csv", newline="") as handle:
        assert next(csv.DictReader(handle))["detectors"] == "zscore;mahalanobis"


def test_times_are_utc_with_milliseconds():
    assert format_time_ns(T0_NS + 123_456_789) == "2023-11-14T22:13:20.123Z"


def test_aware_datetimes_are_written_in_utc(tmp_path):
    start = datetime(2023, 11, 15, 0, 13, 20, 250_000, tzinfo=timezone(timedelta(hours=2)))
    write_windows(tmp_path / "out.jsonl", [window_row(window_start=start)])
    assert json.loads((tmp_path / "out.jsonl").read_text())["window_start"] == "2023-11-14T22:13:20.250Z"


def test_dash_writes_to_stdout(capsys):
    write_windows("-", [window_row(claim="plain")])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ",".join(EXPECTED_COLUMNS)
    assert lines[1].startswith("node-1,2023-11-14T22:13:20.000Z,2023-11-14T22:13:23.000Z,4.5,1.25,4.5,1,zscore")


def test_no_rows_write_only_the_fixed_header(tmp_path):
    write_windows(tmp_path / "out.csv", [])
    assert (tmp_path / "out.csv").read_text() == ("host,window_start,window_end,score,flagged,detectors,"
                                                  "subsystem,claim,ranked_metrics\n")


def test_a_row_missing_a_required_key_is_named():
    with pytest.raises(ValueError, match="window row 2 lacks score"):
        write_windows("-", [window_row(), {k: v for k, v in window_row().items() if k != "score"}])


def test_a_detector_score_the_first_row_lacks_is_rejected():
    with pytest.raises(ValueError, match="window row 2 has 'score_iforest'"):
        write_windows("-", [window_row(), window_row(score_iforest=0.3)])
