"""Publishes frames and catalogs to Kafka with an idempotent, compressing confluent-kafka producer.

A host's frames travel a block at a time: the frames an agent hands out together (a second of ticks by default) are
one message, their records back to back, so that the brokers and the workers handle a tenth of the messages.

While the broker is unreachable, frames go to a bounded on-disk spool instead of piling up in the client; a
background thread replays the spool in order once the broker answers again, and only then does live publishing
resume, so a host's frames reach Kafka in sequence order.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from confluent_kafka import KafkaError, KafkaException, Producer

from producers.spool import DiskSpool, SpooledRecord
from schemas.agent_records import VALUE_DTYPE, Catalog, Frame, encode_catalog, encode_frames, frames_in
from schemas.topics import BrokerUnavailable, TopicNames

log = logging.getLogger(__name__)
# A block's message ends before it passes this size, whatever the block's length: Kafka's clients and brokers refuse
# messages over 1 MB by default (message.max.bytes), and a second of 700 channels at 10 Hz is 57 KB.
MESSAGE_BYTES_LIMIT = 512 << 10


@dataclass
class DeliveryStats:
    """Frames (not messages) sent, delivered, failed, spooled and replayed."""

    sent: int = 0
    delivered: int = 0
    failed: int = 0
    spooled: int = 0
    replayed: int = 0
    last_error: str = ""


FRAME_LINGER_MS = 200  # a message of one frame waits for a few more of its host's to share its batch
BLOCK_LINGER_MS = 5  # a message of a block of frames waits only to share a batch with those sent at the same instant
# A broker that is starting again as the publisher closes gets this long to answer before the spool is kept for the
# next run: a broker just back takes a few seconds to answer metadata, and a stopping agent should not wait long.
CLOSE_WAITS_FOR_BROKER_S = 10.0


def producer_config(bootstrap: str, extra: dict | None = None, frames_per_message: int = 1) -> dict:
    """Idempotent delivery (no duplicates, order kept per host), LZ4 compression, and a 200 ms linger so that a
    host's frames travel, and compress, a few at a time; where each message already holds a block of frames, a
    linger of BLOCK_LINGER_MS, as a longer one would only hold back the frame that closes a window. LZ4 rather than
    zstd: librdkafka builds a zstd context for every batch, which cost the agent's Kafka thread 0.27 % of a core at
    10 Hz against 0.07 % for LZ4, for 1.4 bytes per channel-sample on the wire instead of 1.0 (aiokafka reads both
    through cramjam)."""
    linger_ms = FRAME_LINGER_MS if frames_per_message <= 1 else BLOCK_LINGER_MS
    return {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
            "compression.type": "lz4", "linger.ms": linger_ms, "batch.num.messages": 10000,
            "message.timeout.ms": 60000, "log_level": 0, **(extra or {})}


class KafkaFramePublisher:
    """A FrameSink that sends frames to reveal.samples and catalogs to reveal.catalog, keyed by host."""

    def __init__(self, bootstrap: str, extra_config: dict | None = None, topics: TopicNames = TopicNames(),
                 spool_dir: str | Path | None = None, spool_max_bytes: int = 256 << 20, start_spooling: bool = False,
                 before_replay: Callable[[], None] | None = None, frames_per_message: int = 1):
        """`start_spooling`: the broker did not answer at start, so frames go to the spool from the first one;
        `before_replay`: run once when the broker first answers, before the spool is replayed (creating the topics),
        and again next time if it raises BrokerUnavailable; `frames_per_message`: frames sent as one message, fewer
        when a block ends first or the message would pass MESSAGE_BYTES_LIMIT."""
        if frames_per_message < 1:
            raise ValueError(f"frames_per_message is {frames_per_message}; a message holds at least one frame")
        self.topics = topics
        self.frames_per_message = frames_per_message
        self._block: list[Frame] = []
        self._block_bytes = 0
        self._before_replay = before_replay
        self._last_client_error = None
        self.stats = DeliveryStats()
        self.spool = DiskSpool(spool_dir, spool_max_bytes) if spool_dir else None
        self._config = {**producer_config(bootstrap, extra_config, frames_per_message),
                        "error_cb": self._on_client_error}
        self.producer = Producer(self._config)
        self._fatal = threading.Event()
        self._renewal = threading.Lock()
        self._broker_down = threading.Event()
        self._failed: deque[SpooledRecord] = deque()
        self._replay_failures = 0
        self._stop = threading.Event()
        self._drainer = None
        if self.spool is not None:
            if len(self.spool) or start_spooling:
                self._broker_down.set()
            self._drainer = threading.Thread(target=self._drain_loop, name="spool-drain", daemon=True)
            self._drainer.start()

    def on_catalog(self, catalog: Catalog) -> None:
        self.end_block()
        self._publish(SpooledRecord(self.topics.catalog, catalog.host.encode(), encode_catalog(catalog)))

    def on_frame(self, frame: Frame) -> None:
        frame_bytes = len(frame.values) * VALUE_DTYPE.itemsize
        if self._block and self._block_bytes + frame_bytes > MESSAGE_BYTES_LIMIT:
            self.end_block()
        self._block.append(frame)
        self._block_bytes += frame_bytes
        if len(self._block) >= self.frames_per_message:
            self.end_block()

    def end_block(self) -> None:
        """Send the frames handed out since the last message as one message."""
        if self._block:
            block, self._block, self._block_bytes = self._block, [], 0
            self._publish(SpooledRecord(self.topics.samples, block[0].host.encode(), encode_frames(block)))

    def backlog(self) -> int:
        """Records not yet handed to Kafka: spooled, or failed and waiting to be replayed."""
        return (len(self.spool) if self.spool is not None else 0) + len(self._failed)

    def health(self) -> dict[str, float]:
        """The publisher's state as agent channels."""
        return {"agent.frames_sent": float(self.stats.delivered), "agent.delivery_failures": float(self.stats.failed),
                "agent.spool_records": float(self.backlog()),
                "agent.spool_bytes": float(self.spool.size_bytes if self.spool is not None else 0),
                "agent.dropped_frames": float(self.spool.dropped_records if self.spool is not None else 0)}

    def close(self, timeout_s: float = 30.0) -> int:
        """Deliver what is queued (the spool too, while the broker answers); returns how many records remain."""
        self.end_block()
        if self._drainer is not None:
            self._stop.set()
            self._drainer.join(timeout_s)
            if self._broker_down.is_set() and not self._broker_answers_within(min(timeout_s, CLOSE_WAITS_FOR_BROKER_S)):
                self._keep_in_flight()
            else:
                self._replay(timeout_s)
        remaining = self.producer.flush(timeout_s)
        left = remaining + self.backlog()
        if left:
            log.error("%d records were not delivered (%d kept in the spool for the next run)", left, self.backlog())
        if self.spool is not None:
            self._spool_failed()
            self.spool.close()
        return left

    def _publish(self, record: SpooledRecord) -> None:
        if self.spool is not None and (self._broker_down.is_set() or len(self.spool)):
            self.spool.append(record)
            self.stats.spooled += frames_in(record.value)
            return
        self._produce(record, replay=False)

    def _produce(self, record: SpooledRecord, replay: bool) -> None:
        callback = self._on_replayed if replay else self._on_delivery
        while True:
            if self._fatal.is_set():
                self._renew_producer()
            try:
                self.producer.produce(record.topic, record.value, key=record.key, on_delivery=callback)
                break
            except BufferError:
                self.producer.poll(0.05)  # the local queue is full: let deliveries drain it
            except KafkaException as error:
                if not error.args[0].fatal():
                    raise
                self._fatal.set()
        self.stats.sent += frames_in(record.value)
        self.producer.poll(0)

    def _on_delivery(self, error: KafkaError | None, message) -> None:
        if error is None:
            self.stats.delivered += frames_in(message.value())
            return
        self.stats.failed += frames_in(message.value())
        if self.spool is None:
            if self.stats.last_error != str(error):
                log.error("delivery to %s failed: %s (later failures of the same kind are only counted)",
                          message.topic(), error)
            self.stats.last_error = str(error)
            return
        self._failed.append(SpooledRecord(message.topic(), message.key(), message.value()))  # replayed before the spool
        if not self._broker_down.is_set():
            log.warning("delivery to %s failed (%s): frames go to the spool %s until Kafka answers", message.topic(),
                        error, self.spool.directory)
        self._broker_down.set()

    def _on_replayed(self, error: KafkaError | None, message) -> None:
        if error is None:
            frames = frames_in(message.value())
            self.stats.delivered += frames
            self.stats.replayed += frames
        else:
            self._replay_failures += 1

    def _renew_producer(self) -> None:
        """An idempotent producer that hit a fatal error (the broker lost its sequence state, as after a crash)
        cannot send again: fail what it still holds (so it is spooled and replayed) and start a new one."""
        with self._renewal:
            if not self._fatal.is_set():
                return
            old, self.producer = self.producer, Producer(self._config)
            self._fatal.clear()
        log.warning("Kafka producer stopped on a fatal error; a new one takes over and unacknowledged frames are "
                    "sent again")
        try:
            old.purge()
        except KafkaException:
            pass
        old.poll(0)
        if self.spool is not None:
            self._broker_down.set()

    def _on_client_error(self, error: KafkaError) -> None:
        """The client's errors, one log line per change of kind (librdkafka repeats them at every reconnect)."""
        if error.fatal():
            self._fatal.set()
        unreachable = error.code() in (KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT)
        if unreachable and self.spool is not None:
            if not self._broker_down.is_set():
                log.warning("Kafka unreachable (%s): frames go to the spool %s", error.str(), self.spool.directory)
            self._broker_down.set()
        elif error.code() != self._last_client_error:
            log.warning("Kafka client: %s", error.str())
        self._last_client_error = error.code()

    def _drain_loop(self) -> None:
        while not self._stop.wait(1.0):
            if self._fatal.is_set():
                self._renew_producer()
            if self._broker_down.is_set() and self._broker_answers() and self._prepared_for_replay():
                self._replay(timeout_s=30.0)

    def _prepared_for_replay(self) -> bool:
        if self._before_replay is None:
            return True
        try:
            self._before_replay()
        except BrokerUnavailable:
            return False
        self._before_replay = None
        return True

    def _broker_answers(self) -> bool:
        try:
            self.producer.list_topics(timeout=2.0)
        except KafkaException:
            return False
        return True

    def _broker_answers_within(self, wait_s: float) -> bool:
        deadline = time.monotonic() + wait_s
        while not self._broker_answers():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.5)
        return True

    def _replay(self, timeout_s: float) -> None:
        """Send failed records, then the spool, in order, a batch at a time; resume live publishing when empty."""
        if self.producer.flush(timeout_s):  # earlier live records must resolve first, to keep the order
            return
        while self._failed or len(self.spool):
            batch = list(self._failed) or self.spool.peek(1000)
            from_failed = bool(self._failed)
            self._replay_failures = 0
            for record in batch:
                self._produce(record, replay=True)
            if self.producer.flush(timeout_s) or self._replay_failures:
                return  # not all delivered: the broker went away again; the batch is replayed next time
            if from_failed:
                for _ in batch:
                    self._failed.popleft()
            else:
                self.spool.release(len(batch))
        if self._broker_down.is_set():
            log.info("Kafka reachable again: spool replayed, live publishing resumed")
        self._broker_down.clear()

    def _keep_in_flight(self) -> None:
        """The broker is away as the publisher closes: fail what the client still holds, so that it joins the failed
        records kept in the spool, rather than waiting out the delivery timeout."""
        try:
            self.producer.purge()
        except KafkaException:
            pass
        self.producer.poll(0)

    def _spool_failed(self) -> None:
        """Keep records that failed and were never replayed, at the spool's tail, for the next run."""
        while self._failed:
            self.spool.append(self._failed.popleft())
