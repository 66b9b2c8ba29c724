"""Rescoring a recorded run: what a run directory must hold, the scores.json it writes for both threshold modes,
the same figures every time, and folders of runs expanded."""

import json

import pytest

from producers.recording import RecordingWriter
from producers.synthetic import StepChange, synthetic_catalog, synthetic_frames
from reveal.cli.lab import expand_runs
from reveal.lab.ingest import THRESHOLD_MODES, load_run, rescore_run
from reveal.lab.scoring import HEADLINE, SOURCES
from reveal.lab.truth import FaultLabel, write_truth

START_NS = 1_790_000_000_000_000_000
SECOND = 1_000_000_000


def _recorded_run(run_dir, seconds=120):
    (run_dir / "telemetry").mkdir(parents=True)
    step = StepChange("cpu.busy.cpu3", 80.0, 25.0)
    for index, host in enumerate(("h1", "h2")):
        catalog = synthetic_catalog(host, "lab-test")
        writer = RecordingWriter(run_dir / "telemetry" / f"{host}.avro")
        writer.on_catalog(catalog)
        for frame in synthetic_frames(catalog, START_NS + index * 37_000_000, seconds * 10, seed=index,
                                      steps=(step,) if host == "h2" else ()):
            writer.on_frame(frame)
        writer.close()
    write_truth(run_dir / "truth.jsonl", [FaultLabel("cpu_contention", "h2", START_NS + 80 * SECOND,
                                                     START_NS + 110 * SECOND, "cpu", 1.0)])
    (run_dir / "run.json").write_text(json.dumps({
        "run_id": "synthetic-1", "scenario": "synthetic", "hosts": ["h1", "h2"], "cluster": "lab-test", "seed": 3,
        "baseline_s": 60, "duration_s": seconds, "started_ns": START_NS, "pipeline": "embedded"}))
    return run_dir


def test_rescoring_writes_every_headline_figure_for_both_modes_and_is_repeatable(tmp_path):
    run_dir = _recorded_run(tmp_path / "suite" / "01-synthetic")
    first = rescore_run(run_dir, progress=lambda line: None)
    second = json.loads((run_dir / "scores.json").read_text())
    again = rescore_run(run_dir, progress=lambda line: None)
    assert second["outputs"] == "rescore" and second["judged_s"] == 60 and second["hosts"] == 2
    for mode in THRESHOLD_MODES:
        assert set(HEADLINE) <= set(second["scores"][mode])
        assert set(second["scores"][mode]["by_source"]) == set(SOURCES.values())
    assert first["scores"] == again["scores"]
    assert first["scores"]["calibrated"]["strict_recall"] == 1.0


def test_a_folder_of_runs_is_expanded_and_anything_else_is_named(tmp_path):
    run_dir = _recorded_run(tmp_path / "suite" / "01-synthetic", seconds=20)
    assert expand_runs([str(tmp_path / "suite")]) == [run_dir]
    assert expand_runs([str(run_dir)]) == [run_dir]
    with pytest.raises(ValueError, match="neither a lab run directory"):
        expand_runs([str(tmp_path)])


def test_a_run_without_telemetry_is_named(tmp_path):
    run_dir = _recorded_run(tmp_path / "run", seconds=20)
    for recording in (run_dir / "telemetry").iterdir():
        recording.unlink()
    with pytest.raises(ValueError, match="no telemetry was recorded"):
        load_run(run_dir)
