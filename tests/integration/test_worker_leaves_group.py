"""Two workers share a consumer group and one leaves mid-run (SIGTERM): its hosts move to the other, which carries on
from the last committed offsets; every frame and every window is stored, each once per store.

Each worker writes to its own chDB folder (one process per embedded data path), so the check reads both. What both
stored is the handover: the records the leaver had not released, consumed again by the other. A shared ClickHouse
server would keep one row per key (ReplacingMergeTree); it would also hand the leaver's saved baselines to the
other worker, which here, with a folder of its own, learns the moved hosts' baselines again, so scores after the
move are not compared.
"""

import signal
import threading
import time

import pytest
from confluent_kafka import Producer

from producers.synthetic import StepChange, synthetic_catalog, synthetic_frames
from schemas.records import encode_catalog, encode_frame
from schemas.topics import TopicNames, ensure_topics
from stream_jobs.engine.host_pipeline import EngineSettings
from stream_jobs.host_stage import HostStage
from tests.integration.test_pipeline_end_to_end import sql
from tests.integration.worker_process import WorkerProcess, worker_args

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000_000_000
PARTITIONS = 6
FRAMES_PER_HOST = 600
HOSTS = tuple(f"group-{p}" for p in range(PARTITIONS))


ROUNDS_PER_S = 25  # frames per host per second, 2.5 times real time


def host_input() -> dict[str, tuple]:
    """Each host's catalog and frames; every other host has a step change."""
    frames_by_host = {}
    for partition, host in enumerate(HOSTS):
        catalog = synthetic_catalog(host, cluster="group")
        frames_by_host[host] = (catalog, synthetic_frames(
            catalog, T0, FRAMES_PER_HOST, seed=partition,
            steps=(StepChange("cpu.busy.cpu0", 40.0, 30.0),) if partition % 2 else ()))
    return frames_by_host


def publish_live(bootstrap: str, names: TopicNames, frames_by_host: dict[str, tuple]) -> None:
    """One host per partition, so both workers own hosts whichever partitions they get; frames paced like agents."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "log_level": 0})
    for partition, (catalog, _) in enumerate(frames_by_host.values()):
        producer.produce(names.catalog, encode_catalog(catalog), key=catalog.host.encode(), partition=partition)
    for index in range(FRAMES_PER_HOST):
        for partition, (catalog, frames) in enumerate(frames_by_host.values()):
            producer.produce(names.samples, encode_frame(frames[index]), key=catalog.host.encode(),
                             partition=partition)
        producer.poll(0)
        time.sleep(1 / ROUNDS_PER_S)
    assert producer.flush(30) == 0


def expected_windows(frames_by_host) -> set[tuple[str, int]]:
    stage = HostStage(EngineSettings(warmup_s=30))
    keys = set()
    for catalog, frames in frames_by_host.values():
        stage.on_catalog(catalog)
        keys |= {(row[0], row[2]) for frame in frames for row in stage.on_frame(frame).window_rows}
    return keys


def test_hosts_of_a_worker_that_leaves_move_to_the_other_without_loss(kafka_bootstrap, topic_prefix, tmp_path):
    names = TopicNames(topic_prefix)
    ensure_topics({"bootstrap.servers": kafka_bootstrap}, names, sample_partitions=PARTITIONS)
    frames_by_host = host_input()
    publisher = threading.Thread(target=publish_live, args=(kafka_bootstrap, names, frames_by_host))
    stays_dsn, leaves_dsn = f"chdb://{tmp_path / 'stays'}", f"chdb://{tmp_path / 'leaves'}"
    stays = WorkerProcess(tmp_path / "stays.log", *worker_args(
        kafka_bootstrap, stays_dsn, topic_prefix, "group", "--until-idle", "8", "--duration", "85"))
    stays.wait_for("catalogs known before the first frame")
    publisher.start()
    leaves = WorkerProcess(tmp_path / "leaves.log", *worker_args(
        kafka_bootstrap, leaves_dsn, topic_prefix, "group", "--duration", "85"))
    stays.wait_for("partitions revoked")  # the group now has both workers
    leaves.wait_for("baseline learned")
    leaves.signal(signal.SIGTERM)
    assert leaves.finish() == 0, leaves.text()[-3000:]
    stays.wait_for("partitions revoked", count=2)  # the leaver's hosts move over
    publisher.join()
    assert stays.finish() == 0, stays.text()[-3000:]

    frames = [sql(dsn, "SELECT host, sequence FROM frames FINAL") for dsn in (stays_dsn, leaves_dsn)]
    by_key = {}
    for row in frames[0] + frames[1]:
        by_key.setdefault((row["host"], row["sequence"]), 0)
        by_key[(row["host"], row["sequence"])] += 1
    assert set(by_key) == {(h, s) for h in HOSTS for s in range(FRAMES_PER_HOST)}, "every frame is stored"

    windows = [{(w["host"], w["window_id"]) for w in sql(dsn, "SELECT host, window_id FROM windows FINAL")}
               for dsn in (stays_dsn, leaves_dsn)]
    assert windows[0] | windows[1] == expected_windows(frames_by_host), "every window is stored, none extra"
    both = {"frames": sum(n > 1 for n in by_key.values()), "windows": len(windows[0] & windows[1])}
    print(f"stored by both workers (the handover): {both}")
    assert both["windows"] <= len(HOSTS) * 30, "only the handover is consumed twice"
