"""The lab's quick suite through the real path (emulated hosts, injected faults, agents → Kafka → Faust worker →
ClickHouse): its strict F1 holds the floor, every fault took effect, replaying its recordings through the current
engine tells of exactly the incidents the live worker stored (read back with `reveal sql`), and `reveal lab rescore`
writes every headline figure for both threshold modes."""

import json
import os
import subprocess
import sys

import pytest

from schemas.records import Alert, Anomaly, Evidence
from sinks.clickhouse import data_dir_dsn
from reveal.lab.ingest import THRESHOLD_MODES, load_run, replay_run
from reveal.lab.replay import incidents, reported
from reveal.lab.scoring import HEADLINE

pytestmark = [pytest.mark.integration, pytest.mark.quiet_host, pytest.mark.timeout(1200)]

F1_FLOOR = float(os.environ.get("REVEAL_LAB_F1_FLOOR", "0.8"))


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
                         r["score"], r["threshold"], r["subsystem"], r["claim"],
                         tuple(Evidence(channel, "", 0.0, 0.0, 0.0, 0.0) for channel in r["evidence_channel"]))
                 for r in rows(run_dir, "SELECT host, cluster, window_id, toUnixTimestamp64Nano(start) AS s, "
                                        "toUnixTimestamp64Nano(end) AS e, detectors, score, threshold, subsystem, "
                                        "claim, evidence_channel FROM anomalies FINAL")]
    return incidents(alerts, anomalies)


def test_the_quick_suite_holds_its_floor_and_rescoring_reproduces_its_live_incidents(tmp_path, kafka_bootstrap,
                                                                                    capsys):
    done = reveal("lab", "run", "--suite", "quick", "--bootstrap", kafka_bootstrap, "--out", tmp_path / "runs",
                  "--require-replay-match", "--f1-floor", F1_FLOOR, timeout=1100)
    verdict = [line for line in done.stderr.splitlines() if line.startswith("lab: strict F1")]
    with capsys.disabled():  # the suite's scores belong in the test run's log, as a user running the lab sees them
        print(f"\n{done.stdout}\n{verdict[-1] if verdict else 'lab: no strict F1 line'}")
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = tmp_path / "runs" / "01-quick-faults"
    truth = [json.loads(line) for line in (run_dir / "truth.jsonl").read_text().splitlines()]
    assert len(truth) == 3 and all(label["took_effect"] for label in truth), truth

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
