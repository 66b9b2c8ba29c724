"""After a lab run, and whenever the engine changes: replay a run's recordings through the engine (the live host and
cluster stages), score what it reported against the run's truth, and write the scores.

A recorded run keeps what this needs: `run.json` (hosts, times, seed, baseline), `truth.jsonl` and each host's
`telemetry/H.avro`. `ingest_run` is the first scoring of a run: for a run through Kafka the calibrated outputs are
the Faust worker's, read back from the run's ClickHouse, and the replay is checked against them; for an embedded
run the replay's outputs are stored there as a worker would store them. `rescore_run` replays and scores with the
engine as it is now, touching nothing but the run's scores.json. Both write RUN/scores.json; suites combine runs by
summing counts.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from schemas.records import Frame
from sinks.clickhouse import ClickHouseWriter, data_dir_dsn
from sinks.landing import queue_output
from sinks.rows import alert_from_columns, anomaly_from_columns, catalog_row, frame_row
from sinks.tables import ALERTS, ANOMALIES, LAB_FAULTS, RETRANSMISSIONS, WINDOWS
from stream_jobs.engine.ensemble import MODES as THRESHOLD_MODES
from stream_jobs.engine.host_pipeline import EngineSettings
from reveal.lab.effects import fault_rates
from reveal.lab.replay import ReplayResult, incidents, merged_recordings, replay, reported
from reveal.lab.scoring import (NS_PER_S, JudgedTime, RunScore, run_score_from_record, run_score_record,
                                     score_modes, score_rows)
from reveal.lab.truth import FaultLabel, ReportedWindow, RetransmissionVerdict, RunOutputs, read_truth

LIVE_MODE = "calibrated"
WINDOW_S, STRIDE_S = 3.0, 1.0
# What scoring reads of a stored anomaly: everything but its explanation, hint and evidence.
ANOMALY_SUMMARY = ("host", "cluster", "window_id", "start", "end", "detectors", "score", "threshold", "subsystem",
                   "claim", "evidence_channel", "evidence_feature", "evidence_value", "evidence_baseline",
                   "evidence_std", "evidence_z")


@dataclass(frozen=True)
class RecordedRun:
    """What a run directory holds for scoring: its metadata, its truth and its recordings."""

    directory: Path
    meta: dict
    truth: list[FaultLabel]
    recordings: list[Path]

    @property
    def judged(self) -> JudgedTime:
        """From the end of the baseline to the end of the run, on every host."""
        started = self.meta["started_ns"]
        return JudgedTime(started + round(self.meta["baseline_s"] * NS_PER_S),
                          started + round(self.meta["duration_s"] * NS_PER_S), len(self.meta["hosts"]))

    @property
    def baseline(self) -> tuple[int, int]:
        """From t = 0 of the run to the end of its baseline, in ns since the epoch."""
        return self.meta["started_ns"], self.judged.start_ns

    def settings(self, mode: str) -> EngineSettings:
        return engine_settings_for(self.meta["baseline_s"], mode, self.meta["seed"])


# What a run's run.json must hold to be replayed and scored.
RUN_KEYS = frozenset({"run_id", "scenario", "cluster", "hosts", "started_ns", "baseline_s", "duration_s", "seed"})


def load_run(run_dir: Path) -> RecordedRun:
    """A run directory's metadata, truth and recordings; ValueError names what is missing."""
    if not (run_dir / "run.json").is_file():
        raise ValueError(f"{run_dir} is not a lab run directory (no run.json)")
    recordings = sorted((run_dir / "telemetry").glob("*.avro"))
    if not recordings:
        raise ValueError(f"{run_dir}: no telemetry was recorded (see {run_dir / 'logs'})")
    truth_path = run_dir / "truth.jsonl"
    truth = read_truth(truth_path) if truth_path.is_file() else []
    try:
        meta = json.loads((run_dir / "run.json").read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{run_dir / 'run.json'}: not valid JSON ({error})") from None
    missing = sorted(RUN_KEYS - set(meta)) if isinstance(meta, dict) else ["an object"]
    if missing:
        raise ValueError(f"{run_dir / 'run.json'}: lacks {', '.join(missing)}")
    return RecordedRun(run_dir, meta, truth, recordings)


def engine_settings_for(baseline_s: float, mode: str, seed: int) -> EngineSettings:
    """Settings that learn from the run's clean lead-in (every window that ends inside it) and judge the rest."""
    warmup = max(10, int((baseline_s - WINDOW_S) / STRIDE_S) - 2)
    return EngineSettings(window_s=WINDOW_S, stride_s=STRIDE_S, warmup_s=warmup * STRIDE_S, mode=mode, seed=seed)


def replay_run(run: RecordedRun, mode: str) -> ReplayResult:
    """The run's recordings through the host and cluster stages with the live settings of one threshold mode."""
    return replay(merged_recordings(run.recordings), run.settings(mode))


def rescore_run(run_dir: Path, progress: Callable[[str], None] = print) -> dict:
    """Replay and score a recorded run with the engine as it is now; writes and returns RUN/scores.json."""
    return rescore_runs([run_dir], jobs=1, progress=progress)[0]


def rescore_runs(run_dirs: list[Path], jobs: int, progress: Callable[[str], None] = print) -> list[dict]:
    """Rescore several runs, replaying each run's threshold modes `jobs` at a time in worker processes (in this
    process for one job); each run's scores.json is written as soon as its replays are done."""
    runs = [load_run(run_dir) for run_dir in run_dirs]
    tasks = [(run.directory, mode) for run in runs for mode in THRESHOLD_MODES]
    started = time.monotonic()
    if jobs <= 1:
        results = iter([replayed_outputs(directory, mode) for directory, mode in tasks])
    else:
        pool = ProcessPoolExecutor(jobs)
        results = pool.map(replayed_outputs, *zip(*tasks))
    try:
        return [_rescored(run, {mode: next(results) for mode in THRESHOLD_MODES}, started, progress) for run in runs]
    finally:
        if jobs > 1:
            pool.shutdown()


def replayed_outputs(run_dir: Path, mode: str) -> RunOutputs:
    """The incidents, windows and verdicts of a run's replay with one threshold mode."""
    return reported(replay_run(load_run(run_dir), mode))


def _rescored(run: RecordedRun, outputs: dict[str, RunOutputs], started: float,
              progress: Callable[[str], None]) -> dict:
    summary = _summary(run, score_modes(run.truth, outputs, run.judged), "rescore")
    summary["rescore_s"] = round(time.monotonic() - started, 2)
    _keep_live_scores(run.directory)
    _write_json(run.directory / "scores.json", summary)
    recorded_h = run.meta["duration_s"] * len(run.meta["hosts"]) / 3600
    progress(f"{run.meta['scenario']}: {recorded_h:.2f} host-hours replayed with {len(outputs)} threshold modes, "
             f"scored {summary['rescore_s']:.1f} s after the rescoring began")
    return summary


def ingest_run(run_dir: Path, progress: Callable[[str], None] = print) -> dict:
    """The first scoring of a finished run: replay, compare with (or store as) the live outputs, store truth and
    scores in the run's ClickHouse, write RUN/scores.json."""
    run = load_run(run_dir)
    through_kafka = run.meta.get("pipeline") == "kafka"
    writer = ClickHouseWriter(data_dir_dsn(run_dir))
    try:
        replays = {}
        for mode in THRESHOLD_MODES:
            progress(f"{run.meta['scenario']}: replaying {len(run.recordings)} recordings with {mode} thresholds")
            replays[mode] = replay_run(run, mode)
        outputs = {mode: reported(result) for mode, result in replays.items()}
        agreement = {}
        if through_kafka:
            live = stored_outputs(writer, run.meta["cluster"])
            agreement = live_agreement(live, outputs[LIVE_MODE])
            outputs[LIVE_MODE] = live
        else:
            _store_live(writer, run, replays[LIVE_MODE])
        summary = {**_summary(run, score_modes(run.truth, outputs, run.judged), "live"), **agreement}
        _store_lab(writer, run, summary["scores"])
    finally:
        writer.close()
    _write_json(run_dir / "scores.json", summary)
    return summary


def live_agreement(live: RunOutputs, replayed: RunOutputs) -> dict:
    """Whether the replay told of exactly the incidents the live pipeline did (host, kind, opening, span)."""
    def keys(outputs: RunOutputs) -> list[tuple]:
        return sorted((i.host, i.kind, i.opened_ns, i.start_ns, i.end_ns) for i in outputs.incidents)
    return {"live_incidents": len(live.incidents), "replayed_incidents": len(replayed.incidents),
            "replay_matches_live": keys(live) == keys(replayed)}


def _summary(run: RecordedRun, scores: dict[str, RunScore], outputs: str) -> dict:
    judged = run.judged
    return {"run_id": run.meta["run_id"], "scenario": run.meta["scenario"],
            "pipeline": run.meta.get("pipeline", "embedded"), "outputs": outputs,
            "judged_s": (judged.end_ns - judged.start_ns) / NS_PER_S, "hosts": judged.hosts,
            "faults_without_effect": [label.description or label.fault for label in run.truth if not label.took_effect],
            "fault_effects": [asdict(rates) for rates in
                              fault_rates(run.truth, {path.stem: path for path in run.recordings}, run.baseline)],
            "scores": {mode: score.summary() for mode, score in scores.items()},
            "counts": {mode: run_score_record(score) for mode, score in scores.items()}}


def run_scores(run_dir: Path) -> tuple[dict, dict[str, RunScore]]:
    """The scores.json of a scored run, with its counts back as a RunScore per threshold mode."""
    path = run_dir / "scores.json"
    summary = json.loads(path.read_text())
    if "counts" not in summary:
        raise ValueError(f"{path} was written by an older scoring; run `reveal lab rescore {run_dir}`")
    return summary, {mode: run_score_from_record(record) for mode, record in summary["counts"].items()}


def stored_outputs(writer: ClickHouseWriter, cluster: str) -> RunOutputs:
    """What the live pipeline stored for one cluster: its alerts, anomalies, judged windows and retransmission
    verdicts, as scoring reads them."""
    where = {"cluster": cluster}
    _, alert_rows = writer.query(f"SELECT {ALERTS.select()} FROM alerts FINAL WHERE cluster = {{cluster:String}}",
                                 where)
    _, anomaly_rows = writer.query(f"SELECT {ANOMALIES.select(ANOMALY_SUMMARY)} FROM anomalies FINAL "
                                   "WHERE cluster = {cluster:String}", where)
    _, window_rows = writer.query(f"SELECT {WINDOWS.select(('host', 'start', 'end', 'anomalous'))} FROM windows "
                                  "FINAL WHERE cluster = {cluster:String} AND baseline_ready", where)
    _, retransmission_rows = writer.query(
        f"SELECT {RETRANSMISSIONS.select(('host', 'start', 'end', 'category'))} FROM retransmissions FINAL "
        "WHERE cluster = {cluster:String}", where)
    alerts = [alert_from_columns(dict(zip(ALERTS.columns, row))) for row in alert_rows]
    anomalies = [anomaly_from_columns(dict(zip(ANOMALY_SUMMARY, row))) for row in anomaly_rows]
    return RunOutputs(incidents(alerts, anomalies),
                      [ReportedWindow(host, start, end, bool(flagged)) for host, start, end, flagged in window_rows],
                      [RetransmissionVerdict(*row) for row in retransmission_rows])


def _keep_live_scores(run_dir: Path) -> None:
    """The first scoring of a run through Kafka judged the worker's own outputs: kept as scores-live.json."""
    current, kept = run_dir / "scores.json", run_dir / "scores-live.json"
    if current.is_file() and not kept.exists():
        try:
            if json.loads(current.read_text()).get("outputs") == "live":
                kept.write_text(current.read_text())
        except ValueError:
            pass


def _write_json(path: Path, data: dict) -> None:
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(data, indent=2, default=float))
    partial.replace(path)


def _store_live(writer: ClickHouseWriter, run: RecordedRun, live: ReplayResult) -> None:
    """Frames, catalogs and the live setting's outputs of an embedded run, as a worker would have stored them."""
    writer.add("catalogs", [catalog_row(c) for c in live.catalogs])
    writer.add("frames", [frame_row(item) for item in merged_recordings(run.recordings) if isinstance(item, Frame)])
    queue_output(writer, live.host)
    queue_output(writer, live.cluster)
    writer.flush()


def _store_lab(writer: ClickHouseWriter, run: RecordedRun, summaries: dict) -> None:
    meta = run.meta
    writer.add("lab_faults", [LAB_FAULTS.row(run_id=meta["run_id"], scenario=meta["scenario"], fault=label.fault,
                                             host=label.host, start=label.start_ns, end=label.end_ns,
                                             subsystem=label.subsystem, magnitude=label.magnitude,
                                             description=label.description, took_effect=label.took_effect,
                                             effect=json.dumps(label.effect)) for label in run.truth])
    writer.add("lab_scores", score_rows(meta["run_id"], meta["scenario"], summaries))
    writer.flush()
