"""Replay producer → real broker → real Faust worker → chDB, with a known step change, frames sent a second at a
time as agents send them, and two malformed records."""

import json
import os
import subprocess
import sys

import pytest

from producers.synthetic import StepChange, synthetic_catalog, synthetic_frames
from schemas.records import DEADLETTER_CODEC, decode_anomaly, encode_catalog, encode_frames
from schemas.topics import TopicNames, ensure_topics
from stream_jobs.engine.host_pipeline import EngineSettings
from stream_jobs.host_stage import HostStage
from tests.integration.kafka_io import publish, read_topic

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000_000_000
STEP_AT_S = 100.0
MALFORMED_AT = 50  # records, each a second (ten frames) of the host's
CUT_SHORT_AT = 80


def reveal(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reveal.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def sql(dsn: str, query: str) -> list[dict]:
    result = reveal("sql", "--clickhouse", dsn, "--format", "jsonl", query, timeout=60)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def replayed_anomalies(catalog, frames) -> set[int]:
    """The anomalous windows of the same frames through the host stage in this process."""
    stage = HostStage(EngineSettings(warmup_s=60))
    stage.on_catalog(catalog)
    return {a.window_id for frame in frames for a in stage.on_frame(frame).anomalies}


def test_step_change_reaches_clickhouse_as_an_anomaly_and_bad_record_is_dead_lettered(
        kafka_bootstrap, topic_prefix, tmp_path):
    names = TopicNames(topic_prefix)
    ensure_topics({"bootstrap.servers": kafka_bootstrap}, names)
    catalog = synthetic_catalog("replay-host", cluster="e2e")
    frames = synthetic_frames(catalog, T0, 1500, seed=11, steps=(StepChange("cpu.busy.cpu5", STEP_AT_S, 30.0),))
    key = catalog.host.encode()
    publish(kafka_bootstrap, names.catalog, [(key, encode_catalog(catalog))])
    records = [(key, encode_frames(frames[first:first + 10])) for first in range(0, len(frames), 10)]
    records.insert(MALFORMED_AT, (key, b"\x00this is not a frame"))
    records.insert(CUT_SHORT_AT, (key, records[CUT_SHORT_AT][1][:-7]))  # a copy of the next record, cut short
    publish(kafka_bootstrap, names.samples, records)

    dsn = f"chdb://{tmp_path / 'clickhouse'}"
    worker = reveal("worker", "--bootstrap", kafka_bootstrap, "--clickhouse", dsn, "--topic-prefix", topic_prefix,
                    "--group", f"{topic_prefix}worker", "--warmup", "60", "--until-idle", "6",
                    "--duration", "120")
    assert worker.returncode == 0, worker.stderr[-3000:]

    counts = sql(dsn, "SELECT (SELECT count() FROM frames) AS frames, (SELECT count() FROM windows) AS windows, "
                      "(SELECT count() FROM anomalies) AS anomalies")[0]
    assert counts["frames"] == len(frames)
    assert counts["windows"] >= 140 and counts["anomalies"] > 0

    step_ns = T0 + int(STEP_AT_S * 1e9)
    stepped = sql(dsn, f"SELECT window_id, evidence_channel[1] AS top FROM anomalies "
                       f"WHERE start >= fromUnixTimestamp64Nano({step_ns}) ORDER BY window_id")
    windows_after_step = sql(dsn, f"SELECT count() AS n FROM windows "
                                  f"WHERE start >= fromUnixTimestamp64Nano({step_ns})")[0]["n"]
    assert len(stepped) >= 0.9 * windows_after_step
    assert all(row["top"] == "cpu.busy.cpu5" for row in stepped)

    live = {row["window_id"] for row in sql(dsn, "SELECT window_id FROM anomalies WHERE has(detectors, 'peer') = 0")}
    assert live == replayed_anomalies(catalog, frames), "the worker on Kafka judges as the engine does in-process"

    published = [decode_anomaly(m.value()) for m in read_topic(kafka_bootstrap, names.anomalies, counts["anomalies"])]
    assert len(published) == counts["anomalies"] and {a.host for a in published} == {"replay-host"}

    dead = [DEADLETTER_CODEC.decode(m.value()) for m in read_topic(kafka_bootstrap, names.deadletter, 2)]
    assert len(dead) == 2
    assert dead[0]["step"] == "decode-frame" and "not an Avro single-object message" in dead[0]["reason"]
    assert dead[0]["payload"] == b"\x00this is not a frame" and dead[0]["offset"] == MALFORMED_AT
    assert "record 10 of the message: corrupt" in dead[1]["reason"] and dead[1]["offset"] == CUT_SHORT_AT
    assert dead[1]["payload"] == records[CUT_SHORT_AT][1] and {d["host"] for d in dead} == {"replay-host"}
