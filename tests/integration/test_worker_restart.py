"""A worker that stops and starts again carries on from its saved baseline instead of learning it again."""

import pytest

from producers.synthetic import StepChange, synthetic_catalog, synthetic_frames
from schemas.records import encode_catalog, encode_frame
from schemas.topics import TopicNames, ensure_topics
from tests.integration.kafka_io import publish
from tests.integration.test_pipeline_end_to_end import reveal, sql

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000_000_000


def test_restarted_worker_restores_the_baseline_and_judges_from_its_first_window(kafka_bootstrap, topic_prefix,
                                                                                 tmp_path):
    names = TopicNames(topic_prefix)
    ensure_topics({"bootstrap.servers": kafka_bootstrap}, names)
    catalog = synthetic_catalog("restart-host", cluster="e2e")
    frames = synthetic_frames(catalog, T0, 1400, seed=5, steps=(StepChange("cpu.busy.cpu2", 110.0, 30.0),))
    key = catalog.host.encode()
    publish(kafka_bootstrap, names.catalog, [(key, encode_catalog(catalog))])
    dsn = f"chdb://{tmp_path / 'clickhouse'}"
    worker_args = ("worker", "--bootstrap", kafka_bootstrap, "--clickhouse", dsn, "--topic-prefix", topic_prefix,
                   "--group", f"{topic_prefix}worker", "--warmup", "60", "--until-idle", "6",
                   "--duration", "120")

    publish(kafka_bootstrap, names.samples, [(key, encode_frame(f)) for f in frames[:800]])
    first = reveal(*worker_args)
    assert first.returncode == 0, first.stderr[-3000:]
    assert sql(dsn, "SELECT count() AS n FROM baselines")[0]["n"] >= 1

    publish(kafka_bootstrap, names.samples, [(key, encode_frame(f)) for f in frames[800:]])
    second = reveal(*worker_args)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "baseline restored" in second.stderr

    learning_after_restart = sql(dsn, f"SELECT count() AS n FROM windows WHERE baseline_ready = 0 AND "
                                      f"start >= fromUnixTimestamp64Nano({T0 + 80 * 10**9})")[0]["n"]
    assert learning_after_restart == 0, "the restarted worker does not learn the baseline again"
    stepped = sql(dsn, f"SELECT count() AS n FROM anomalies WHERE start >= fromUnixTimestamp64Nano("
                       f"{T0 + 110 * 10**9}) AND evidence_channel[1] = 'cpu.busy.cpu2'")[0]["n"]
    assert stepped >= 10
