"""The distributed shell: a Faust app whose agents feed Kafka records to the host and cluster stages.

The host agent (samples, keyed by host) publishes anomalies, alerts and one summary per host-window to
reveal.host-windows keyed by cluster; the cluster agent compares each host with its peers and classifies
retransmissions.

Each agent only decodes, calls the stage and forwards what it returns; every decision is in the engine.
ClickHouse calls run on one dedicated thread so the event loop never blocks on storage. A record's offset is
committed only once its results are stored and no state in memory depends on it (stream_jobs/releases.py), so a
worker killed at any instant, or a host moved to another worker, resumes where nothing is lost; records may be
consumed twice, and the tables' keys store them once. Each partition is processed in offset order from where its
last owner committed: a record that arrives past the next expected offset (a fetch from before a rebalance) makes
the worker read the partition again from that offset rather than skip what lies between. While ClickHouse refuses
inserts, rows stay queued, attempts back off exponentially, and consumption pauses when the queue is full.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Hashable

import faust

from schemas.codec import DecodeError
from schemas.kafka_security import KafkaSecurity
from schemas.topics import TopicNames
from schemas.records import (DEADLETTER_CODEC, decode_catalog, decode_frame, decode_host_window, encode_alert,
                             encode_anomaly, encode_host_window)
from stream_jobs.allocator import release_free_memory
from stream_jobs.backoff import Backoff
from stream_jobs.engine.host_pipeline import EngineSettings
from stream_jobs.host_stage import HostStage
from stream_jobs.cluster_stage import ClusterStage
from stream_jobs.faust_transport import PromptApp
from stream_jobs.releases import ReadCursors, ReleaseTracker, Verdict
from stream_jobs.storage import ResultStore, StorageUnavailable

log = logging.getLogger(__name__)

# A producer batch holds several host-window summaries (~34 KB each at 700 channels), where Faust's 16 KB default
# held none whole; kept under the broker's 1 MB message.max.bytes.
PRODUCER_BATCH_BYTES = 512 << 10
# How much one fetch may bring of each partition. With Faust's 1 MB (~180 frames of 700 channels) a worker took at
# most ~1,200 frames per second, its threads waiting in select; with 4 MB one worker keeps up with 150 hosts at
# 10 Hz (1,500 frames per second, `reveal bench pipeline --hosts 150 --duration 90`).
FETCH_BYTES_PER_PARTITION = 4 << 20
RELEASE_MEMORY_EVERY_S = 10.0  # a few milliseconds each time (stream_jobs/allocator.py)


@dataclass(frozen=True)
class WorkerSettings:
    bootstrap: str
    app_id: str = "reveal-worker"
    engine: EngineSettings = field(default_factory=EngineSettings)
    topics: TopicNames = TopicNames()
    flush_every_s: float = 1.0
    report_every_s: float = 10.0
    security: KafkaSecurity = KafkaSecurity()
    storage_retry_max_s: float = 30.0
    max_held_s: float = 300.0
    session_timeout_s: float = 10.0  # how soon a crashed worker's partitions move to the others


@dataclass
class WorkerCounters:
    records: int = 0
    dead_letters: int = 0
    anomalies: int = 0
    storage_errors: int = 0
    rereads: int = 0  # partitions read again from the expected offset after a gap


class WorkerShell:
    """The worker's state outside Faust: the host stage, the store its results go to and the store's thread.
    `open_store` runs on that thread, where every later call on the store runs too."""

    def __init__(self, settings: WorkerSettings, open_store: Callable[[], ResultStore]):
        self.settings = settings
        self.counters = WorkerCounters()
        self.last_record_at: float | None = None
        self.storage_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="clickhouse")
        self.store: ResultStore = self.storage_thread.submit(open_store).result()
        self.stage = HostStage(settings.engine, self.saved_baseline)
        self.cluster = ClusterStage()
        self.releases = ReleaseTracker(settings.max_held_s)
        self.cursors = ReadCursors(compacted_topics=frozenset({settings.topics.catalog}))
        self.backoff = Backoff(first_s=min(0.5, settings.storage_retry_max_s), max_s=settings.storage_retry_max_s)
        self.paused = False
        self.acknowledge: Callable[[Hashable, int], None] = _unconnected  # the Faust app connects its consumer
        self.highwater: Callable[[Hashable], int | None] = lambda tp: None  # the log end of a partition, for lag

    def saved_baseline(self, host: str, catalog_version: int) -> dict | None:
        """The latest baseline stored for this host and catalog, so a restarted worker does not learn it again."""
        return self.storage_thread.submit(self.store.saved_baseline, host, catalog_version).result()

    def progress(self) -> str:
        """One line on what the worker has done so far, for operators watching its log."""
        c, stage = self.counters, self.stage.counters
        return (f"{c.records} records, {stage.frames} frames from {len(self.stage.pipelines)} hosts, "
                f"{c.anomalies} anomalies, {c.dead_letters} dead letters, {stage.held} frames held for a catalog, "
                f"{self.store.pending_rows()} rows waiting for ClickHouse, {c.storage_errors} storage errors, "
                f"{self.releases.held()} records held for windows in progress")

    def note_record(self) -> None:
        self.counters.records += 1
        self.last_record_at = time.monotonic()

    def hold_frame(self, frame, partition, offset: int) -> None:
        """Keep the frame's record unreleased while the host's state depends on it."""
        self.releases.hold(frame.host, partition, frame.timestamp_ns, offset)
        self.releases.advance(frame.host, self.stage.needed_since_ns(frame.host))

    def forget_hosts(self) -> None:
        """Partitions were revoked: drop every host's state; what was not released is consumed again."""
        for host in set(self.stage.pipelines) | set(self.stage.catalogs):
            self.stage.forget(host)
        self.releases.forget_all()
        self.cursors.reset()
        log.info("partitions revoked: host state dropped, unreleased records will be consumed again")

    async def flush(self) -> None:
        """Store the queued rows, then release the records they came from; while ClickHouse refuses, back off."""
        if not self.backoff.due(time.monotonic()):
            return
        ready, generation = self.releases.take_ready(), self.cursors.generation
        try:
            written = await asyncio.get_running_loop().run_in_executor(self.storage_thread, self.store.flush)
        except StorageUnavailable as error:
            if generation == self.cursors.generation:
                self.releases.put_back(ready)
            self._storage_failed(error)
            return
        self._storage_recovered(written)
        if generation != self.cursors.generation:
            return  # partitions were revoked meanwhile: their new owner, maybe this worker again, reads them again
        for partition, offset in ready:
            self.acknowledge(partition, offset)

    def _storage_failed(self, error: StorageUnavailable) -> None:
        self.counters.storage_errors += 1
        first = not self.backoff.failing
        delay = self.backoff.failed(time.monotonic())
        if first:
            log.error("ClickHouse unavailable: %s; %d rows kept, retrying with backoff (%.1f s, doubling up to "
                      "%.0f s)", error, self.store.pending_rows(), delay, self.backoff.max_s)
        else:
            log.debug("ClickHouse still unavailable (attempt %d); next in %.1f s", self.backoff.failures, delay)

    def _storage_recovered(self, written: int) -> None:
        if self.backoff.failing:
            self.last_record_at = time.monotonic()  # --until-idle counts from when storage works again
            log.warning("ClickHouse writable again after %.1f s and %d failed attempts; %d queued rows written",
                        time.monotonic() - self.backoff.failing_since, self.backoff.failures, written)
        self.backoff.succeeded()

    async def wait_for_room(self) -> None:
        """Back-pressure: take no more input while the storage queue is full (nothing queued is dropped)."""
        if not self.store.is_full():
            return
        if not self.backoff.failing:
            await self.flush()  # ClickHouse is healthy: write the full queue now rather than at the next tick
            if not self.store.is_full():
                return
        if not self.paused:
            self.paused = True
            log.warning("ClickHouse queue full (%d rows): consumption paused until rows are written",
                        self.store.pending_rows())
        while self.store.is_full():
            await asyncio.sleep(0.2)
        if self.paused:
            self.paused = False
            log.info("ClickHouse queue below %d rows: consumption resumed", self.store.max_pending_rows)

    def close(self, close_incidents: bool) -> None:
        """Write what is left and release the storage thread (after the event loop stopped). Open incidents are
        closed only when the run ends (`close_incidents`); a worker stopped by an operator leaves them open, since
        its records are not committed past them and whichever worker owns their hosts next carries them on."""
        if close_incidents:
            self.store.store_output(self.stage.close())
        else:
            log.info("worker stopping: %d open incidents left for the next owner of their hosts",
                     self.stage.incidents.open_count() + self.cluster.incidents.open_count())
        self.store.store_cluster_output(self.cluster.flush(close_incidents))
        self.storage_thread.submit(self.store.close).result()
        self.storage_thread.shutdown()


def _unconnected(partition, offset: int) -> None:
    raise RuntimeError(f"record {partition}@{offset} released before the worker's consumer was connected")


@dataclass(eq=False, slots=True, weakref_slot=True)
class Delivered:
    """A released record's position, all that Faust's `Consumer.ack` reads of a message (it tracks unacknowledged
    messages in a weak set, hence the weak reference); made when the record is released, while what is held until
    then is two integers per record (stream_jobs/releases.py)."""

    topic: str
    tp: object
    offset: int
    acked: bool = False


def dead_letter(step: str, event, reason: str) -> bytes:
    """The dead-letter record for a Kafka message that could not be handled."""
    message = event.message
    key = message.key or b""
    return DEADLETTER_CODEC.encode({
        "step": step, "topic": message.topic, "partition": message.partition, "offset": message.offset,
        "host": key.decode("utf-8", "replace"), "reason": reason, "payload": bytes(message.value or b""),
        "rejected_at_ns": time.time_ns()})


def create_app(settings: WorkerSettings, shell: WorkerShell) -> faust.App:
    """The Faust app with the catalog and host-stage agents and the storage flush timer."""
    state_dir = Path.home() / ".cache" / "reveal" / "faust" / settings.app_id
    state_dir.mkdir(parents=True, exist_ok=True)
    app = PromptApp(settings.app_id, broker=f"kafka://{settings.bootstrap}", value_serializer="raw",
                    key_serializer="raw", store="memory://", web_enabled=False,
                    consumer_auto_offset_reset="earliest", topic_disable_leader=True,
                    producer_acks=-1, producer_max_batch_size=PRODUCER_BATCH_BYTES,
                    consumer_max_fetch_size=FETCH_BYTES_PER_PARTITION,
                    broker_commit_interval=1.0, stream_wait_empty=False,
                    broker_session_timeout=settings.session_timeout_s,
                    broker_credentials=settings.security.faust_credentials(), datadir=str(state_dir))
    samples = app.topic(settings.topics.samples, key_type=bytes, value_type=bytes, internal=False)
    catalogs = app.topic(settings.topics.catalog, key_type=bytes, value_type=bytes, internal=False)
    anomalies = app.topic(settings.topics.anomalies, key_type=bytes, value_type=bytes, internal=False)
    alerts = app.topic(settings.topics.alerts, key_type=bytes, value_type=bytes, internal=False)
    host_windows = app.topic(settings.topics.host_windows, key_type=bytes, value_type=bytes, internal=False)
    deadletters = app.topic(settings.topics.deadletter, key_type=bytes, value_type=bytes, internal=False)

    async def reject(step: str, event, error: Exception) -> None:
        shell.counters.dead_letters += 1
        log.warning("%s: record %s[%d]@%d rejected: %s", step, event.message.topic, event.message.partition,
                    event.message.offset, error)
        await deadletters.send(key=event.message.key, value=dead_letter(step, event, str(error)))

    async def publish(output) -> None:
        shell.store.store_output(output)
        await publish_findings(output)
        for summary in output.host_windows:
            await host_windows.send(key=summary.cluster.encode(), value=encode_host_window(summary))

    async def publish_findings(output) -> None:
        for anomaly in output.anomalies:
            shell.counters.anomalies += 1
            await anomalies.send(key=anomaly.host.encode(), value=encode_anomaly(anomaly))
        for alert in output.alerts:
            await alerts.send(key=alert.host.encode(), value=encode_alert(alert))

    async def publish_cluster(output) -> None:
        shell.store.store_cluster_output(output)
        await publish_findings(output)

    async def consume(stream, step: str, decode, handle, forward=publish, hold=None) -> None:
        """Decode each record in offset order, dead-letter what cannot be decoded, hand the rest to the stage;
        offsets are committed when the shell releases the records (after their results are stored)."""
        async for event in stream.noack().events():
            message = event.message
            if not await ready_to_process(message):
                continue
            generation = shell.cursors.generation
            shell.note_record()
            try:
                record = decode(event.value)
            except DecodeError as error:
                await reject(step, event, error)
                record = None
            else:
                await forward(handle(record))
            if generation != shell.cursors.generation:
                continue  # revoked while it was handled: its state is gone and the new owner reads it again
            shell.releases.consumed(message.tp, message.offset)
            if record is not None and hold is not None:
                hold(record, message.tp, message.offset)
            shell.cursors.processed(message.tp, message.offset)

    def acknowledge(tp, offset: int) -> None:
        """Tell Faust a released record is done with, so that its offset is committed once those before it are."""
        app.consumer.ack(Delivered(tp.topic, tp, offset))

    shell.acknowledge = acknowledge

    def highwater(tp) -> int | None:
        """The partition's log end as the consumer last fetched it (None before its first fetch)."""
        try:
            return app.consumer.highwater(tp)
        except Exception:  # not started, or the partition no longer assigned: no figure rather than a failed scrape
            return None

    shell.highwater = highwater

    async def ready_to_process(message) -> bool:
        """Whether this record is the next one its partition owes the stage; after a gap, read again from it."""
        verdict = shell.cursors.judge(message.tp, message.topic, message.offset)
        if verdict is Verdict.GAP:
            await read_again(message.tp, message.offset)
        if verdict is not Verdict.PROCESS:
            return False
        generation = shell.cursors.generation
        await shell.wait_for_room()
        return generation == shell.cursors.generation  # not revoked while it waited for storage

    async def read_again(tp, arrived: int) -> None:
        """Seek the partition back to the next expected offset (or to the log's start if that has expired)."""
        if not shell.cursors.should_seek(tp, time.monotonic()):
            return
        generation, expected = shell.cursors.generation, shell.cursors.expected(tp)
        earliest = (await app.consumer.earliest_offsets(tp)).get(tp, expected)
        if generation != shell.cursors.generation:
            return
        if earliest > expected:
            log.warning("%s[%d]: records %d to %d expired from Kafka before they were read; reading on from %d",
                        tp.topic, tp.partition, expected, earliest - 1, earliest)
            shell.cursors.start(tp, earliest)
            shell.cursors.should_seek(tp, time.monotonic())
            expected = earliest
        shell.counters.rereads += 1
        log.info("%s[%d]: record %d arrived while %d was expected; reading again from %d",
                 tp.topic, tp.partition, arrived, expected, expected)
        await app.consumer.seek(tp, expected)

    async def position_partitions(assigned) -> None:
        """Read every assigned partition from its committed offset, or from the log's start if none is."""
        shell.cursors.reset()
        generation = shell.cursors.generation
        committed = await app.consumer.seek_to_committed()
        starts = {tp: offset for tp, offset in committed.items() if offset is not None and offset >= 0}
        missing = [tp for tp in assigned if tp not in starts]
        if missing:
            starts.update(await app.consumer.earliest_offsets(*missing))
        if generation != shell.cursors.generation:
            return
        for tp in assigned:
            shell.cursors.start(tp, starts[tp])
            await app.consumer.seek(tp, starts[tp])

    def take_catalog(catalog):
        shell.store.store_catalog(catalog)
        return shell.stage.on_catalog(catalog)

    def take_frame(frame):
        shell.store.store_frame(frame)
        return shell.stage.on_frame(frame)

    @app.agent(catalogs)
    async def catalog_agent(stream):
        await consume(stream, "decode-catalog", decode_catalog, take_catalog)

    @app.agent(samples)
    async def host_agent(stream):
        await consume(stream, "decode-frame", decode_frame, take_frame, hold=shell.hold_frame)

    @app.agent(host_windows)
    async def cluster_agent(stream):
        await consume(stream, "decode-host-window", decode_host_window, shell.cluster.on_host_window, publish_cluster)

    @app.on_partitions_revoked.connect
    async def drop_revoked_hosts(sender, revoked, **kwargs):
        if revoked:
            shell.forget_hosts()

    @app.on_partitions_assigned.connect
    async def position_assigned(sender, assigned, **kwargs):
        if assigned:
            await position_partitions(assigned)

    @app.timer(settings.flush_every_s)
    async def flush_storage():
        await shell.flush()
        for tp, offset in shell.cursors.stalled(time.monotonic()):
            log.debug("%s[%d]: nothing arrived since reading again from %d; seeking again", tp.topic, tp.partition,
                      offset)
            await app.consumer.seek(tp, offset)

    @app.timer(settings.report_every_s)
    async def report_progress():
        log.info("worker: %s", shell.progress())

    @app.timer(RELEASE_MEMORY_EVERY_S)
    async def release_memory():
        release_free_memory()

    return app
