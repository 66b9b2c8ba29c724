"""Ingesting and rescoring lab runs: stored outputs read back as scoring reads them and the lab's rows stored; a
rescored run writes every headline figure for both threshold modes, the same every time; a run without telemetry is
named; and the real runs kept in tests/fixtures/lab-runs say what every fault did (a loss fault's host retransmitted;
a training host, which sends as much as it receives, retransmitted every frame dropped, and the loss shows in its own
retransmission rate, while an inference client's dropped frames are mostly its server's to retransmit)."""

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from schemas.records import Alert, Anomaly, Evidence
from sinks.clickhouse import ClickHouseWriter
from sinks.rows import alert_row, anomaly_row
from reveal.lab.effects import fault_rates
from reveal.lab.ingest import THRESHOLD_MODES, _store_lab, load_run, rescore_run, stored_outputs
from reveal.lab.replay import incidents
from reveal.lab.scoring import HEADLINE, SOURCES
from reveal.lab.truth import FaultLabel, ReportedWindow, RetransmissionVerdict
from tests.reveal.lab.runs import recorded_run

T0 = 1_700_000_000_000_000_000
S = 1_000_000_000
RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "lab-runs"
RUNS = sorted(path.parent for path in RECORDED.glob("*/*/run.json"))


def test_stored_alerts_anomalies_windows_and_verdicts_read_back_as_scoring_reads_them(chdb_dsn, database):
    writer = ClickHouseWriter(chdb_dsn, database)
    alert = Alert("h1:1", "h1", "lab", "open", T0, T0 + 3 * S, 2.5, "cpu", "cpu.user rose", "look at cpu")
    anomaly = Anomaly("h1", "lab", 7, T0, T0 + 3 * S, ("zscore", "mahalanobis"), 4.0, 1.0, "cpu", "cpu.user rose",
                      (Evidence("cpu.user.all", "mean", 90.0, 10.0, 2.0, 40.0),), "hot loop", "look at cpu")
    writer.add("alerts", [alert_row(alert)])
    writer.add("anomalies", [anomaly_row(anomaly), anomaly_row(Anomaly(**{**anomaly.__dict__, "cluster": "other"}))])
    writer.add("windows", [["h1", "lab", 7, T0, T0 + 3 * S, 30, 1, 4.0, 1.0, 1, [], [], [], [], ""],
                           ["h1", "lab", 1, T0 - 6 * S, T0 - 3 * S, 30, 0, 0.0, 0.0, 0, [], [], [], [], ""]])
    writer.add("retransmissions", [["h1", "lab", 7, T0, T0 + 3 * S, "fault-induced", "this host alone", 40.0,
                                    1000.0, 6.0]])
    writer.flush()
    outputs = stored_outputs(writer, "lab")
    read_anomaly = Anomaly(**{**anomaly.__dict__, "evidence": (), "explanation": "", "hint": ""})
    assert outputs.incidents == incidents([alert], [read_anomaly])
    assert outputs.windows == [ReportedWindow("h1", T0, T0 + 3 * S, True)]
    assert outputs.retransmissions == [RetransmissionVerdict("h1", T0, T0 + 3 * S, "fault-induced")]


def test_a_runs_faults_and_scores_are_stored_in_their_tables(chdb_dsn, database):
    writer = ClickHouseWriter(chdb_dsn, database)
    label = FaultLabel("cpu_contention", "h1", T0, T0 + 60 * S, "cpu", 2.0, "2 workers", True, {"cpu_seconds": 1.5})
    run = SimpleNamespace(meta={"run_id": "run-1", "scenario": "cpu-hog"}, truth=[label])
    _store_lab(writer, run, {"calibrated": {"precision": 0.9}})
    _, faults = writer.query("SELECT run_id, fault, host, toUnixTimestamp64Nano(end), took_effect, effect "
                             "FROM lab_faults")
    assert faults == [("run-1", "cpu_contention", "h1", T0 + 60 * S, True, '{"cpu_seconds": 1.5}')]
    _, scores = writer.query("SELECT run_id, scenario, thresholds, metric, value FROM lab_scores")
    assert scores == [("run-1", "cpu-hog", "calibrated", "precision", 0.9)]


def test_rescoring_writes_every_headline_figure_for_both_modes_and_is_repeatable(tmp_path):
    run_dir = recorded_run(tmp_path / "suite" / "01-synthetic")
    first = rescore_run(run_dir, progress=lambda line: None)
    second = json.loads((run_dir / "scores.json").read_text())
    again = rescore_run(run_dir, progress=lambda line: None)
    assert second["outputs"] == "rescore" and second["judged_s"] == 60 and second["hosts"] == 2
    for mode in THRESHOLD_MODES:
        assert set(HEADLINE) <= set(second["scores"][mode])
        assert set(second["scores"][mode]["by_source"]) == set(SOURCES.values())
    assert first["scores"] == again["scores"]
    assert first["scores"]["calibrated"]["strict_recall"] == 1.0


def test_a_run_without_telemetry_is_named(tmp_path):
    run_dir = recorded_run(tmp_path / "run", seconds=20)
    for recording in (run_dir / "telemetry").iterdir():
        recording.unlink()
    with pytest.raises(ValueError, match="no telemetry was recorded"):
        load_run(run_dir)


def test_recorded_runs_are_kept():
    assert RUNS, f"no recorded lab runs under {RECORDED}"


@pytest.mark.parametrize("run_dir", RUNS, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_every_recorded_fault_says_what_it_did_and_loss_was_retransmitted(run_dir):
    run = load_run(run_dir)
    assert len(run.recordings) == len(run.meta["hosts"]) >= 6
    assert all(label.effect for label in run.truth)
    for label in (label for label in run.truth if label.fault == "packet_loss"):
        assert label.took_effect and label.drops_timeline
        assert label.effect["packets_dropped"] > 0 and label.effect["retransmitted_segments"] > 0
    if "train" in run.meta["workloads"]:
        for label in (label for label in run.truth if label.fault == "packet_loss"):
            assert label.effect["retransmitted_segments"] >= label.effect["packets_dropped"]
        for rates in fault_rates(run.truth, {path.stem: path for path in run.recordings}, run.baseline):
            # a loss in force from the start is measured against peers whose ring traffic retransmits too
            floor = 1.2 if rates.reference == "on its peers" else 2.0
            assert rates.during_per_s > floor * rates.baseline_per_s, rates.describe()


def test_rescoring_a_recorded_run_is_repeatable(tmp_path):
    with_faults = [load_run(run) for run in RUNS if load_run(run).truth]
    source = min(with_faults, key=lambda run: run.meta["duration_s"] * len(run.meta["hosts"])).directory
    copy = shutil.copytree(source, tmp_path / source.name)
    first = rescore_run(copy, progress=lambda line: None)
    second = rescore_run(copy, progress=lambda line: None)
    assert first["scores"] == second["scores"]
    for mode in THRESHOLD_MODES:
        assert set(HEADLINE) <= set(first["scores"][mode])
    took_effect = [label for label in load_run(copy).truth if label.took_effect]
    assert first["scores"]["calibrated"]["faults_took_effect"] == len(took_effect)
