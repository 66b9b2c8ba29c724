"""Reads the compacted catalog topic from its beginning, so a restarted worker knows every host's catalog before
its first frame (the worker's consumer group has already committed past the catalogs it read last time)."""

from __future__ import annotations

import logging
import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from schemas.codec import DecodeError
from schemas.records import Catalog, decode_catalog

log = logging.getLogger(__name__)
# What a partition answers while its leader is being elected (a topic created a moment ago, a broker restarting).
LEADER_PENDING = (KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                  KafkaError.UNKNOWN_TOPIC_OR_PART)


def read_catalogs(bootstrap: str, topic: str, timeout_s: float = 30.0,
                  client_config: dict | None = None) -> list[Catalog]:
    """Every catalog on the topic, oldest first; undecodable records are logged and left out."""
    consumer = Consumer({**(client_config or {}), "bootstrap.servers": bootstrap,
                         "group.id": f"reveal-catalog-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
                         "log_level": 3})
    try:
        deadline = time.monotonic() + timeout_s
        partitions = consumer.list_topics(topic, timeout=timeout_s).topics[topic].partitions
        ends = {p: _log_end(consumer, TopicPartition(topic, p), deadline) for p in partitions}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions if ends[p] > 0])
        return _read_until(consumer, {p: end for p, end in ends.items() if end > 0}, timeout_s)
    finally:
        consumer.close()


def _log_end(consumer: Consumer, partition: TopicPartition, deadline: float) -> int:
    """The partition's log end; a topic created a moment ago has leaders in the metadata before they answer
    (NOT_LEADER_FOR_PARTITION meanwhile), so a pending leader is waited for until the deadline."""
    while True:
        try:
            return consumer.get_watermark_offsets(partition, timeout=max(deadline - time.monotonic(), 0.1))[1]
        except KafkaException as error:
            pending = error.args[0].code() in LEADER_PENDING or error.args[0].retriable()
            if not pending or time.monotonic() >= deadline:
                raise
            time.sleep(0.1)


def _read_until(consumer: Consumer, ends: dict[int, int], timeout_s: float) -> list[Catalog]:
    catalogs, deadline = [], time.monotonic() + timeout_s
    while ends and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None or message.error():
            continue
        if message.offset() + 1 >= ends.get(message.partition(), 0):
            ends.pop(message.partition(), None)
        try:
            catalogs.append(decode_catalog(message.value()))
        except DecodeError as error:
            log.warning("catalog at %s[%d]@%d left out: %s", message.topic(), message.partition(),
                        message.offset(), error)
    return catalogs
