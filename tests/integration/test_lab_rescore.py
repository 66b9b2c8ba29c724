"""`reveal lab rescore` on a run that went through the real path (agents → Kafka → Faust worker → ClickHouse):
replaying its recordings through the current engine tells of exactly the incidents the live worker stored, and the
rescored scores.json holds every headline figure for both threshold modes."""

import json
import os
import subprocess
import sys

import pytest

from schemas.records import Alert, Anomaly
from sinks.clickhouse import data_dir_dsn
from reveal.lab.ingest import THRESHOLD_MODES, load_run, replay_run
from reveal.lab.replay import incidents, reported
from reveal.lab.scoring import HEADLINE

pytestmark = [pytest.mark.integration, pytest.mark.quiet_host, pytest.mark.timeout(600)]

SCENARIO = """name = "rescore-check"
hosts = ["h1", "h2", "h3"]
workloads = ["train"]
duration_s = 75
baseline_s = 30
warmup_s = 3
seed = 5

[[fault]]
kind = "cpu_contention"
host = "h1"
start_s = 40
duration_s = 20
magnitude = 2

[[fault]]
kind = "packet_loss"
host = "h2"
start_s = 58
duration_s = 12
magnitude = 0.02
"""


def reveal(*args: str, timeout: float = 400) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reveal.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def rows(run_dir, query: str) -> list[dict]:
    done = reveal("sql", "--clickhouse", data_dir_dsn(run_dir), "--format", "jsonl", query, timeout=60)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def live_incidents(run_dir) -> list:
    alerts = [Alert(r["alert_id"], r["host"], r["cluster"], r["state"], int(r["s"]), int(r["e"]), r["severity"],
                    r["subsystem"], r["summary"], r["hint"], r["kind"])
              for r in rows(run_dir, "SELECT alert_id, host, cluster, state, toUnixTimestamp64Nano(start) AS s, "
                                     "toUnixTimestamp64Nano(end) AS e, severity, subsystem, summary, hint, kind "
                                     "FROM alerts FINAL")]
    anomalies = [Anomaly(r["host"], r["cluster"], r["window_id"], int(r["s"]), int(r["e"]), tuple(r["detectors"]),
                         r["score"], r["threshold"], r["subsystem"], r["claim"], ())
                 for r in rows(run_dir, "SELECT host, cluster, window_id, toUnixTimestamp64Nano(start) AS s, "
                                        "toUnixTimestamp64Nano(end) AS e, detectors, score, threshold, subsystem, "
                                        "claim FROM anomalies FINAL")]
    return incidents(alerts, anomalies)


def test_rescoring_a_run_through_kafka_reproduces_its_live_incidents(tmp_path, kafka_bootstrap):
    scenario = tmp_path / "rescore.toml"
    scenario.write_text(SCENARIO)
    done = reveal("lab", "run", "--scenario", scenario, "--bootstrap", kafka_bootstrap, "--out", tmp_path / "runs")
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = next((tmp_path / "runs").glob("*/run.json")).parent
    truth = [json.loads(line) for line in (run_dir / "truth.jsonl").read_text().splitlines()]
    assert [label["took_effect"] for label in truth] == [True, True]

    live = live_incidents(run_dir)
    replayed = reported(replay_run(load_run(run_dir), "calibrated")).incidents
    assert live, "the live run raised no incident, so there is nothing to compare"
    assert replayed == live

    rescored = reveal("lab", "rescore", run_dir)
    assert rescored.returncode == 0, rescored.stderr[-3000:]
    summary = json.loads((run_dir / "scores.json").read_text())
    assert summary["outputs"] == "rescore" and (run_dir / "scores-live.json").is_file()
    for mode in THRESHOLD_MODES:
        assert set(HEADLINE) <= set(summary["scores"][mode]) and "by_source" in summary["scores"][mode]
    live_summary = json.loads((run_dir / "scores-live.json").read_text())
    assert live_summary["replay_matches_live"] is True
    assert live_summary["scores"]["calibrated"] == summary["scores"]["calibrated"]
