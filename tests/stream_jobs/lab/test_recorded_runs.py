"""The lab runs kept in the repository (tests/fixtures/lab-runs: what rescoring needs of real runs on six emulated
hosts): every fault took effect by its own counters and, for packet loss, by the lossy host's retransmissions in
its telemetry; rescoring them is repeatable and writes every headline figure."""

import shutil
from pathlib import Path

import pytest

from stream_jobs.lab.effects import fault_rates
from stream_jobs.lab.ingest import THRESHOLD_MODES, load_run, rescore_run
from stream_jobs.lab.scoring import HEADLINE

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "lab-runs"
RUNS = sorted(path.parent for path in RECORDED.glob("*/*/run.json"))


def test_recorded_runs_are_kept():
    assert RUNS, f"no recorded lab runs under {RECORDED}"


@pytest.mark.parametrize("run_dir", RUNS, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_every_recorded_fault_took_effect_and_loss_shows_in_retransmissions(run_dir):
    run = load_run(run_dir)
    assert len(run.recordings) == len(run.meta["hosts"]) >= 6
    assert all(label.took_effect and label.effect for label in run.truth)
    for rates in fault_rates(run.truth, {path.stem: path for path in run.recordings}, run.baseline):
        assert rates.during_per_s > max(2 * rates.baseline_per_s, 0.5), rates.describe()


def test_rescoring_a_recorded_run_is_repeatable(tmp_path):
    source = next(run for run in RUNS if load_run(run).truth)
    copy = shutil.copytree(source, tmp_path / source.name)
    first = rescore_run(copy, progress=lambda line: None)
    second = rescore_run(copy, progress=lambda line: None)
    assert first["scores"] == second["scores"]
    for mode in THRESHOLD_MODES:
        assert set(HEADLINE) <= set(first["scores"][mode])
    assert first["scores"]["calibrated"]["faults_took_effect"] == len(load_run(copy).truth)
