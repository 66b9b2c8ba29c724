"""Small helpers for integration tests: publish raw records and read a topic back, through the real broker."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, Producer

from schemas.records import decode_frames, frames_in


def publish(bootstrap: str, topic: str, records: list[tuple[bytes, bytes]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "log_level": 0})
    for key, value in records:
        producer.produce(topic, value, key=key)
        producer.poll(0)
    assert producer.flush(30) == 0, "the broker did not take every record"


def read_topic(bootstrap: str, topic: str, expected: int, timeout_s: float = 30.0, count=lambda message: 1) -> list:
    """Messages of a topic from the beginning, until `expected` have arrived or the time is up; `count` says what a
    message counts for (for frames: how many it holds)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"test-{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False, "log_level": 0})
    consumer.subscribe([topic])
    messages, counted, deadline = [], 0, time.monotonic() + timeout_s
    try:
        while counted < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                messages.append(message)
                counted += count(message)
    finally:
        consumer.close()
    return messages


def read_frames(bootstrap: str, topic: str, expected: int, timeout_s: float = 30.0) -> list:
    """The frames of a samples topic from the beginning (a message holds one or more), until `expected` have
    arrived or the time is up."""
    messages = read_topic(bootstrap, topic, expected, timeout_s, count=lambda message: frames_in(message.value()))
    return [frame for message in messages for frame in decode_frames(message.value())]
