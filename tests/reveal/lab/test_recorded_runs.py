"""The lab runs kept in the repository (tests/fixtures/lab-runs: what rescoring needs of real runs on six emulated
hosts): every fault carries the counters that say whether it took effect; a loss fault's host retransmitted, and
on training hosts, which send as much as they receive, it retransmitted every frame dropped and the loss shows in
its own retransmission rate (an inference client receives most of its frames: those dropped on their way to it are
its server's to retransmit); rescoring them is repeatable and writes every headline figure."""

import shutil
from pathlib import Path

import pytest

from reveal.lab.effects import fault_rates
from reveal.lab.ingest import THRESHOLD_MODES, load_run, rescore_run
from reveal.lab.scoring import HEADLINE

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "lab-runs"
RUNS = sorted(path.parent for path in RECORDED.glob("*/*/run.json"))


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
            assert rates.during_per_s > 2 * rates.baseline_per_s, rates.describe()


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
