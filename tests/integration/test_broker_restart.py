"""The broker restarts while three agents publish: every frame is stored exactly once, by (host, sequence).

Each agent's spool holds what it sends while the broker is away and its idempotent producer keeps retries from
doubling records. A spool replay may still resend a batch the broker had taken before it went down, so a raw read
of `frames` may see a sequence twice until the ReplacingMergeTree merges; `FINAL`, the documented read for an
at-least-once table, sees each exactly once.
"""

import time

import pytest

from producers.publisher import KafkaFramePublisher
from producers.synthetic import synthetic_catalog, synthetic_frames
from schemas.topics import TopicNames, ensure_topics
from tests.integration.own_broker import OwnBroker
from tests.integration.test_pipeline_end_to_end import sql
from tests.integration.worker_process import WorkerProcess, worker_args

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000_000_000
HOSTS = ("restart-a", "restart-b", "restart-c")
FRAMES_PER_HOST = 450
BEFORE, DURING = 150, 300  # frames sent before the broker stops, and up to where it is back


@pytest.fixture
def restartable_broker(kafka_bootstrap, tmp_path):
    broker = OwnBroker(tmp_path / "kafka", port=19200)
    broker.start()
    yield broker
    broker.stop()


def publish_round_robin(publishers, frames_by_host, first: int, last: int, pause_s: float = 0.01) -> None:
    """Frames `first`..`last` of every host, interleaved as live agents would send them."""
    for index in range(first, last):
        for publisher, frames in zip(publishers, frames_by_host):
            publisher.on_frame(frames[index])
        time.sleep(pause_s)


def test_every_frame_is_stored_exactly_once_across_a_broker_restart(restartable_broker, tmp_path):
    broker, prefix = restartable_broker, "restart."
    names = TopicNames(prefix)
    ensure_topics({"bootstrap.servers": broker.bootstrap}, names)
    catalogs = [synthetic_catalog(host, cluster="restart") for host in HOSTS]
    frames_by_host = [synthetic_frames(c, T0, FRAMES_PER_HOST, seed=i) for i, c in enumerate(catalogs)]
    publishers = [KafkaFramePublisher(broker.bootstrap, topics=names, spool_dir=tmp_path / f"spool-{host}",
                                      extra_config={"reconnect.backoff.max.ms": 500}) for host in HOSTS]
    for publisher, catalog in zip(publishers, catalogs):
        publisher.on_catalog(catalog)
    publish_round_robin(publishers, frames_by_host, 0, BEFORE)

    broker.stop()
    publish_round_robin(publishers, frames_by_host, BEFORE, DURING)
    assert all(p.stats.spooled > 0 for p in publishers), "each agent spools while the broker is away"
    broker.start()
    dsn = f"chdb://{tmp_path / 'clickhouse'}"
    worker = WorkerProcess(tmp_path / "worker.log", *worker_args(broker.bootstrap, dsn, prefix, "worker",
                                                                 "--until-idle", "6", "--duration", "80"))
    publish_round_robin(publishers, frames_by_host, DURING, FRAMES_PER_HOST)
    assert [p.close(timeout_s=60) for p in publishers] == [0, 0, 0], "every spool is replayed"
    assert worker.finish() == 0, worker.text()[-3000:]

    stored = sql(dsn, "SELECT host, count() AS frames, uniqExact(sequence) AS sequences, min(sequence) AS first, "
                      "max(sequence) AS last FROM frames FINAL GROUP BY host ORDER BY host")
    assert stored == [{"host": h, "frames": FRAMES_PER_HOST, "sequences": FRAMES_PER_HOST, "first": 0,
                       "last": FRAMES_PER_HOST - 1} for h in HOSTS]
    raw = sql(dsn, "SELECT count() AS rows, uniqExact(host, sequence) AS keys FROM frames")[0]
    assert raw["keys"] == len(HOSTS) * FRAMES_PER_HOST, "no frame is missing even before merges"
    print(f"frames stored twice before merges: {raw['rows'] - raw['keys']}")
