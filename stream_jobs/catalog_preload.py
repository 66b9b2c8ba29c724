"""Reads the compacted catalog topic from its beginning, so a restarted worker knows every host's catalog before
its first frame (the worker's consumer group has already committed past the catalogs it read last time)."""

from __future__ import annotations

import logging
import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from schemas.codec import DecodeError
from schemas.records import Catalog, decode_catalog

log = logging.getLogger(__name__)


def read_catalogs(bootstrap: str, topic: str, timeout_s: float = 30.0,
                  client_config: dict | None = None) -> list[Catalog]:
    """Every catalog on the topic, oldest first; undecodable records are logged and left out."""
    consumer = Consumer({**(client_config or {}), "bootstrap.servers": bootstrap,
                         "group.id": f"reveal-catalog-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
                         "log_level": 3})
    try:
        partitions = consumer.list_topics(topic, timeout=timeout_s).topics[topic].partitions
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout_s)[1] for p in partitions}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions if ends[p] > 0])
        return _read_until(consumer, {p: end for p, end in ends.items() if end > 0}, timeout_s)
    finally:
        consumer.close()


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
