"""A worker killed with SIGKILL mid-stream and started again stores the same windows, anomalies and alerts as a
worker that ran through the same input, each once.

Offsets are committed only for frames whose results are stored and that no state in memory still needs (windows
in progress, a baseline being learned, an open incident), so the restarted worker consumes again from there and
rebuilds that state; windows it computes twice are identical, and `FINAL` reads them once.
"""

import signal

import pytest

from producers.synthetic import StepChange, synthetic_catalog, synthetic_frames
from schemas.records import encode_catalog, encode_frame
from schemas.topics import TopicNames, ensure_topics
from tests.integration.kafka_io import publish
from tests.integration.test_pipeline_end_to_end import sql
from tests.integration.worker_process import WorkerProcess, worker_args

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000_000_000
HOSTS = ("killed-a", "killed-b")
FRAMES_PER_HOST = 900
STEP = StepChange("cpu.busy.cpu3", 60.0, 30.0)
KILLED_AT = 700  # frames per host read before the kill: past the baseline, 10 s into the step's incident
WINDOWS = ("SELECT host, window_id, baseline_ready, round(score, 9) AS score, anomalous, flagged_by FROM windows "
           "FINAL ORDER BY host, window_id")
ANOMALIES = ("SELECT host, window_id, subsystem, claim, evidence_channel FROM anomalies FINAL "
             "ORDER BY host, window_id")
ALERTS = "SELECT alert_id, state, start, end, subsystem, summary FROM alerts FINAL ORDER BY alert_id, state"


def host_input() -> dict[str, tuple]:
    """Two hosts' catalogs and frames; one has a step change."""
    inputs = {}
    for seed, host in enumerate(HOSTS):
        catalog = synthetic_catalog(host, cluster="killed")
        inputs[host] = (catalog, synthetic_frames(catalog, T0, FRAMES_PER_HOST, seed=seed,
                                                  steps=(STEP,) if seed == 0 else ()))
    return inputs


def publish_frames(bootstrap: str, names: TopicNames, inputs: dict, first: int, last: int) -> None:
    for host, (catalog, frames) in inputs.items():
        if first == 0:
            publish(bootstrap, names.catalog, [(host.encode(), encode_catalog(catalog))])
        publish(bootstrap, names.samples, [(host.encode(), encode_frame(f)) for f in frames[first:last]])


def stored(dsn: str) -> dict:
    return {"windows": sql(dsn, WINDOWS), "anomalies": sql(dsn, ANOMALIES), "alerts": sql(dsn, ALERTS),
            "duplicates": sql(dsn, "SELECT count() - uniqExact(host, window_id) AS n FROM windows FINAL")[0]["n"]}


def test_worker_killed_and_restarted_stores_what_an_uninterrupted_worker_does(kafka_bootstrap, topic_prefix,
                                                                              tmp_path):
    names = TopicNames(topic_prefix)
    ensure_topics({"bootstrap.servers": kafka_bootstrap}, names)
    inputs = host_input()
    until_idle = ("--until-idle", "6", "--duration", "80")
    killed_dsn = f"chdb://{tmp_path / 'killed'}"
    args = worker_args(kafka_bootstrap, killed_dsn, topic_prefix, "killed", *until_idle)

    publish_frames(kafka_bootstrap, names, inputs, 0, KILLED_AT)
    victim = WorkerProcess(tmp_path / "victim.log", *worker_args(kafka_bootstrap, killed_dsn, topic_prefix, "killed",
                                                                 "--duration", "80"))
    victim.wait_for(f"{KILLED_AT * len(HOSTS)} frames from {len(HOSTS)} hosts", timeout_s=30)
    victim.signal(signal.SIGKILL)  # it has read all there is: windows in progress and an incident are in memory
    assert victim.finish() == -signal.SIGKILL
    publish_frames(kafka_bootstrap, names, inputs, KILLED_AT, FRAMES_PER_HOST)
    restarted = WorkerProcess(tmp_path / "restarted.log", *args)
    assert restarted.finish() == 0, restarted.text()[-3000:]

    reference_dsn = f"chdb://{tmp_path / 'reference'}"
    reference = WorkerProcess(tmp_path / "reference.log",
                              *worker_args(kafka_bootstrap, reference_dsn, topic_prefix, "reference", *until_idle))
    assert reference.finish() == 0, reference.text()[-3000:]

    expected, got = stored(reference_dsn), stored(killed_dsn)
    assert got["duplicates"] == 0 and expected["duplicates"] == 0
    assert len(expected["windows"]) >= len(HOSTS) * 80 and expected["anomalies"]
    assert [(w["host"], w["window_id"]) for w in got["windows"]] == \
        [(w["host"], w["window_id"]) for w in expected["windows"]], "no window lost, none extra"
    assert got["windows"] == expected["windows"]
    assert got["anomalies"] == expected["anomalies"]
    assert got["alerts"] == expected["alerts"]
