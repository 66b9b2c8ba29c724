"""The agent's publisher across a real broker outage: frames spool to disk and arrive in order afterwards."""

import time

import numpy as np
import pytest

from producers.publisher import KafkaFramePublisher
from schemas.records import Frame, decode_frame
from schemas.topics import TopicNames, ensure_topics
from tests.integration.kafka_io import read_topic
from tests.integration.own_broker import OwnBroker

pytestmark = pytest.mark.integration

@pytest.fixture
def own_broker(kafka_bootstrap, tmp_path):
    """A second broker of our own on another port, so the test can stop and restart it."""
    broker = OwnBroker(tmp_path / "kafka", port=19092)
    broker.start()
    yield broker
    broker.stop()


def publish_frames(publisher, first: int, last: int, pause_s: float = 0.02) -> None:
    for sequence in range(first, last):
        publisher.on_frame(Frame("outage-host", "ci", 1_700_000_000_000_000_000 + sequence * 10**8, sequence, 1,
                                 np.full(50, float(sequence))))
        time.sleep(pause_s)


def test_frames_published_while_the_broker_is_down_arrive_in_order_once_it_returns(own_broker, tmp_path):
    bootstrap = own_broker.bootstrap
    names = TopicNames("outage.")
    ensure_topics({"bootstrap.servers": bootstrap}, names)
    publisher = KafkaFramePublisher(bootstrap, topics=names, spool_dir=tmp_path / "spool",
                                    extra_config={"reconnect.backoff.max.ms": 500})
    publish_frames(publisher, 0, 40)
    assert publisher.producer.flush(30) == 0

    own_broker.stop()
    publish_frames(publisher, 40, 140)
    assert publisher.stats.spooled > 0, "frames sent during the outage must go to the spool"
    own_broker.start()
    publish_frames(publisher, 140, 160)
    assert publisher.close(timeout_s=60) == 0

    sequences = [decode_frame(m.value()).sequence for m in read_topic(bootstrap, names.samples, 160, timeout_s=60)]
    first_seen = list(dict.fromkeys(sequences))
    assert first_seen == list(range(160)), "every frame arrives, in sequence order"
    assert publisher.stats.replayed >= publisher.stats.spooled
