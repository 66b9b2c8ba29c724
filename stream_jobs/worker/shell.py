"""The worker's state outside Faust: its settings and counters, the host and cluster stages, the records held
until their results are stored, and the store those results go to, called on one dedicated thread so that the event
loop never blocks on storage. While the store refuses rows, they stay queued, attempts back off exponentially, and
consumption pauses when the queue is full."""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Hashable

from schemas.kafka_security import KafkaSecurity
from schemas.topics import TopicNames
from stream_jobs.cluster_stage import ClusterStage
from stream_jobs.engine.settings import EngineSettings
from stream_jobs.host_stage import HostStage
from stream_jobs.storage import ResultStore, StorageUnavailable
from stream_jobs.worker.backoff import Backoff
from stream_jobs.worker.offset_releases import ReadCursors, ReleaseTracker

log = logging.getLogger(__name__)


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
    `open_store` runs on that thread, and so do the store's flushes, queries and close."""

    def __init__(self, settings: WorkerSettings, open_store: Callable[[], ResultStore]):
        self.settings = settings
        self.counters = WorkerCounters()
        self.last_record_at: float | None = None
        self.storage_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="clickhouse")
        self.store: ResultStore = self.storage_thread.submit(open_store).result()
        self.stage = HostStage(settings.engine, self.saved_baseline)
        self.cluster = ClusterStage(settings.engine)
        self.releases = ReleaseTracker(settings.max_held_s)
        self.cursors = ReadCursors(compacted_topics=frozenset({settings.topics.catalog}))
        self.backoff = Backoff(first_s=min(0.5, settings.storage_retry_max_s), max_s=settings.storage_retry_max_s)
        self.paused = False
        self.embedded_storage_bytes: int | None = None  # taken after each flush, on the storage thread
        self.acknowledge: Callable[[Hashable, int], None] = _unconnected  # the Faust app connects its consumer
        self.highwater: Callable[[Hashable], int | None] = lambda tp: None  # the log end of a partition, for lag

    def unread_records(self) -> dict[Hashable, int]:
        """Records each assigned partition holds beyond what the worker has read (the consumer's lag), for the
        partitions whose log end the consumer has fetched."""
        lag = {}
        for tp, position in self.cursors.positions().items():
            end = self.highwater(tp)
            if end is not None and end >= 0:
                lag[tp] = max(0, end - position)
        return lag

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

    def hold_frames(self, frames, partition, offset: int) -> None:
        """Keep the record of a message's frames (one host's, oldest first) unreleased while the host's state
        depends on its oldest frame."""
        host = frames[0].host
        self.releases.hold(host, partition, frames[0].timestamp_ns, offset)
        self.releases.advance(host, self.stage.needed_since_ns(host))

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
            written = await asyncio.get_running_loop().run_in_executor(self.storage_thread, self._flush_store)
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

    def _flush_store(self) -> int:
        """On the storage thread: write the queued rows, then note what an embedded database holds now."""
        written = self.store.flush()
        try:
            self.embedded_storage_bytes = self.store.embedded_memory_bytes()
        except StorageUnavailable as error:  # the rows are written: a figure missed must not put them back
            log.debug("embedded ClickHouse's memory not read: %s", error)
        return written

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
                     self.cluster.incidents.open_count())
        self.store.store_output(self.cluster.flush(close_incidents))
        self.storage_thread.submit(self.store.close).result()
        self.storage_thread.shutdown()


def _unconnected(partition, offset: int) -> None:
    raise RuntimeError(f"record {partition}@{offset} released before the worker's consumer was connected")
