"""After a lab run: replay its telemetry through the engine, store the pipeline's outputs and the ground truth in the
run's ClickHouse, and score the run with calibrated and paper thresholds and with three window settings.

The stored outputs are those of the live settings (calibrated thresholds, 3 s windows every 1 s); the other
settings are replayed from the same frames for the comparison. Scores go to the lab_scores table and to
RUN/scores.json, which suites combine by summing counts.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from schemas.records import Alert, Anomaly, Frame
from sinks.clickhouse import ClickHouseWriter, data_dir_dsn
from sinks.rows import catalog_row, frame_row
from stream_jobs.engine.host_pipeline import EngineSettings
from stream_jobs.lab.replay import ReplayResult, incidents, merged_recordings, replay, reported
from stream_jobs.lab.scoring import RunScore, score_modes, score_rows, window_agreement
from stream_jobs.lab.truth import FaultLabel, ReportedWindow, RetransmissionVerdict, RunOutputs, read_truth
from stream_jobs.results import queue_cluster_output, queue_output

THRESHOLD_MODES = {"calibrated": "calibrated", "paper": "paper"}
WINDOW_SETTINGS = {"3s/1s": (3.0, 1.0), "1.5s/0.5s": (1.5, 0.5), "5s/2s": (5.0, 2.0)}
LIVE_SETTING = "3s/1s"


def engine_settings_for(baseline_s: float, window: tuple[float, float], mode: str, seed: int) -> EngineSettings:
    """Settings that learn from the run's clean lead-in (every window that ends inside it) and judge the rest."""
    window_s, stride_s = window
    warmup = max(10, int((baseline_s - window_s) / stride_s) - 2)
    return EngineSettings(window_s=window_s, stride_s=stride_s, warmup_windows=warmup, mode=mode, seed=seed)


def ingest_run(run_dir: Path, progress: Callable[[str], None] = print) -> dict:
    """Replay, store and score one run; returns what scores.json holds.

    For a run through Kafka, the live setting's outputs are the Faust worker's, read back from the run's ClickHouse;
    for an embedded run they are the replay's, stored now.
    """
    meta = json.loads((run_dir / "run.json").read_text())
    truth = read_truth(run_dir / "truth.jsonl")
    items = list(merged_recordings(sorted((run_dir / "telemetry").glob("*.avro"))))
    if not items:
        raise ValueError(f"{run_dir}: no telemetry was recorded (see {run_dir / 'logs'})")
    through_kafka = meta.get("pipeline") == "kafka"
    writer = ClickHouseWriter(data_dir_dsn(run_dir))
    try:
        outputs, live = _replayed_outputs(meta, items, skip_live=through_kafka, progress=progress)
        if through_kafka:
            outputs["calibrated"][LIVE_SETTING] = stored_outputs(writer, meta["cluster"])
        scores = score_modes(truth, {mode: o[LIVE_SETTING] for mode, o in outputs.items()},
                             hosts=len(meta["hosts"]), duration_s=meta["duration_s"] - meta["baseline_s"])
        figures = {mode: {**scores[mode].figures(),
                          **window_agreement({n: o.windows for n, o in outputs[mode].items()})}
                   for mode in THRESHOLD_MODES}
        if live is not None:
            _store_live(writer, items, live)
        _store_lab(writer, meta, truth, figures)
    finally:
        writer.close()
    summary = {"run_id": meta["run_id"], "scenario": meta["scenario"], "pipeline": meta.get("pipeline", "embedded"),
               "figures": figures, "scores": {mode: _score_record(score) for mode, score in scores.items()}}
    (run_dir / "scores.json").write_text(json.dumps(summary, indent=2, default=float))
    return summary


def _replayed_outputs(meta: dict, items: list, skip_live: bool,
                      progress: Callable[[str], None]) -> tuple[dict[str, dict[str, RunOutputs]], ReplayResult | None]:
    """Every threshold mode and window setting replayed (but the live one when the worker produced it)."""
    outputs: dict[str, dict[str, RunOutputs]] = {mode: {} for mode in THRESHOLD_MODES}
    live = None
    for mode in THRESHOLD_MODES:
        for name, window in WINDOW_SETTINGS.items():
            is_live = mode == "calibrated" and name == LIVE_SETTING
            if is_live and skip_live:
                continue
            settings = engine_settings_for(meta["baseline_s"], window, mode, meta["seed"])
            progress(f"{meta['scenario']}: replaying {len(items)} records with {mode} thresholds, windows {name}")
            result = replay(items, settings)
            outputs[mode][name] = reported(result)
            live = result if is_live else live
    return outputs, live


def stored_outputs(writer: ClickHouseWriter, cluster: str) -> RunOutputs:
    """What the live pipeline stored for one cluster: its alerts, anomalies, judged windows and retransmission
    verdicts, as scoring reads them."""
    where = {"cluster": cluster}
    _, alert_rows = writer.query(
        "SELECT alert_id, host, cluster, state, toUnixTimestamp64Nano(start), toUnixTimestamp64Nano(end), severity, "
        "subsystem, summary, hint, kind FROM alerts FINAL WHERE cluster = {cluster:String}", where)
    _, anomaly_rows = writer.query(
        "SELECT host, cluster, window_id, toUnixTimestamp64Nano(start), toUnixTimestamp64Nano(end), detectors, score, "
        "threshold, subsystem, claim FROM anomalies FINAL WHERE cluster = {cluster:String}", where)
    _, window_rows = writer.query(
        "SELECT host, toUnixTimestamp64Nano(start), toUnixTimestamp64Nano(end), anomalous FROM windows FINAL "
        "WHERE cluster = {cluster:String} AND baseline_ready", where)
    _, retransmission_rows = writer.query(
        "SELECT host, toUnixTimestamp64Nano(start), toUnixTimestamp64Nano(end), category FROM retransmissions FINAL "
        "WHERE cluster = {cluster:String}", where)
    alerts = [Alert(*row) for row in alert_rows]
    anomalies = [Anomaly(*row[:5], tuple(row[5]), *row[6:], evidence=()) for row in anomaly_rows]
    return RunOutputs(incidents(alerts, anomalies),
                      [ReportedWindow(host, start, end, bool(flagged)) for host, start, end, flagged in window_rows],
                      [RetransmissionVerdict(*row) for row in retransmission_rows])


def load_run_scores(run_dir: Path) -> tuple[dict, dict[str, RunScore]]:
    """The scores.json of an ingested run, with its scores as RunScore per threshold mode."""
    summary = json.loads((run_dir / "scores.json").read_text())
    return summary, {mode: RunScore(**{**record, "delays_s": tuple(record["delays_s"])})
                     for mode, record in summary["scores"].items()}


def _score_record(score: RunScore) -> dict:
    record = asdict(score)
    record["delays_s"] = list(record["delays_s"])
    return record


def _store_live(writer: ClickHouseWriter, items: list, live: ReplayResult) -> None:
    """Frames, catalogs and the live setting's outputs of an embedded run, as a worker would have stored them."""
    writer.add("catalogs", [catalog_row(c) for c in live.catalogs])
    writer.add("frames", [frame_row(item) for item in items if isinstance(item, Frame)])
    queue_output(writer, live.host)
    queue_cluster_output(writer, live.cluster)
    writer.flush()


def _store_lab(writer: ClickHouseWriter, meta: dict, truth: list[FaultLabel], figures: dict) -> None:
    writer.add("lab_faults", [[meta["run_id"], meta["scenario"], label.fault, label.host, label.start_ns,
                               label.end_ns, label.subsystem, label.magnitude, label.description] for label in truth])
    writer.add("lab_scores", score_rows(meta["run_id"], meta["scenario"], figures))
    writer.flush()
