"""Publishes frames and catalogs to Kafka with an idempotent, compressing confluent-kafka producer."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from confluent_kafka import KafkaError, Producer

from schemas.records import Catalog, Frame, encode_catalog, encode_frame
from schemas.topics import TopicNames

log = logging.getLogger(__name__)


@dataclass
class DeliveryStats:
    sent: int = 0
    delivered: int = 0
    failed: int = 0
    last_error: str = ""


def producer_config(bootstrap: str, extra: dict | None = None) -> dict:
    """Idempotent delivery (no duplicates, order kept per host), zstd compression (aiokafka reads it through
    cramjam), and a short linger so frames travel in batches."""
    return {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
            "compression.type": "zstd", "linger.ms": 20, "batch.num.messages": 10000,
            "message.timeout.ms": 300000, **(extra or {})}


class KafkaFramePublisher:
    """A FrameSink that sends frames to reveal.samples and catalogs to reveal.catalog, keyed by host."""

    def __init__(self, bootstrap: str, extra_config: dict | None = None, topics: TopicNames = TopicNames()):
        self.topics = topics
        self.producer = Producer(producer_config(bootstrap, extra_config))
        self.stats = DeliveryStats()

    def on_catalog(self, catalog: Catalog) -> None:
        self._send(self.topics.catalog, catalog.host, encode_catalog(catalog))
        self.producer.flush(10)

    def on_frame(self, frame: Frame) -> None:
        self._send(self.topics.samples, frame.host, encode_frame(frame))

    def close(self, timeout_s: float = 30.0) -> int:
        """Deliver what is queued; returns how many messages could not be delivered in time."""
        remaining = self.producer.flush(timeout_s)
        if remaining:
            log.error("%d messages were not delivered within %.0f s", remaining, timeout_s)
        return remaining

    def _send(self, topic: str, host: str, payload: bytes) -> None:
        while True:
            try:
                self.producer.produce(topic, payload, key=host.encode(), on_delivery=self._on_delivery)
                break
            except BufferError:
                self.producer.poll(0.05)  # the local queue is full: let deliveries drain it
        self.stats.sent += 1
        self.producer.poll(0)

    def _on_delivery(self, error: KafkaError | None, message) -> None:
        if error is None:
            self.stats.delivered += 1
            return
        self.stats.failed += 1
        self.stats.last_error = str(error)
        log.error("delivery to %s failed: %s", message.topic(), error)
