"""A small lab run recorded for the tests of rescoring: two synthetic hosts, one of them with a step change that a
cpu_contention fault explains, and the run.json that names them."""

from __future__ import annotations

import json

from producers.recording import RecordingWriter
from producers.synthetic import StepChange, synthetic_catalog, synthetic_frames
from reveal.lab.truth import FaultLabel, write_truth

START_NS = 1_790_000_000_000_000_000
SECOND = 1_000_000_000


def recorded_run(run_dir, seconds=120):
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
