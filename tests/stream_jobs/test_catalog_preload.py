"""A restarted worker's catalogs, read from the beginning of the compacted catalog topic of the real broker: none from
an empty topic; every host's from a filled one, a record that is not a catalog left out."""

import time

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition

from producers.synthetic import synthetic_catalog
from schemas.records import encode_catalog
from schemas.topics import TopicNames, ensure_topics
from stream_jobs.catalog_preload import read_catalogs
from tests.integration.kafka_io import publish

pytestmark = pytest.mark.integration


def wait_until_readable(bootstrap: str, topic: str, partitions: int, timeout_s: float = 30.0) -> None:
    """Until the log ends of a topic just created can be asked for: its partitions have leaders in the metadata a
    moment before their leaders answer (NOT_LEADER_FOR_PARTITION meanwhile)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "log_level": 0})
    deadline = time.monotonic() + timeout_s
    try:
        for partition in range(partitions):
            while True:
                try:
                    consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
                    break
                except KafkaException:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
    finally:
        consumer.close()


def test_every_catalog_on_the_topic_is_read_and_a_record_that_is_not_one_is_left_out(kafka_bootstrap, topic_prefix,
                                                                                     caplog):
    names = TopicNames(topic_prefix)
    ensure_topics({"bootstrap.servers": kafka_bootstrap}, names, sample_partitions=2)
    wait_until_readable(kafka_bootstrap, names.catalog, partitions=2)
    assert read_catalogs(kafka_bootstrap, names.catalog, timeout_s=30.0) == []
    catalogs = [synthetic_catalog(f"preload-{index}") for index in range(3)]
    records = [(catalog.host.encode(), encode_catalog(catalog)) for catalog in catalogs]
    publish(kafka_bootstrap, names.catalog, records[:2] + [(b"preload-9", b"not a catalog")] + records[2:])
    read = read_catalogs(kafka_bootstrap, names.catalog, timeout_s=30.0)
    assert sorted(read, key=lambda catalog: catalog.host) == catalogs
    assert "left out" in caplog.text
