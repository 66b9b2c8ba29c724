"""The distributed shell: a Faust app whose agents feed Kafka records to the host and cluster stages.

The host agent (samples, keyed by host) publishes anomalies, alerts and one summary per host-window to
reveal.host-windows keyed by cluster; the cluster agent compares each host with its peers and classifies
retransmissions.

Each agent only decodes, calls the stage and forwards what it returns; every decision is in the engine.
ClickHouse calls run on one dedicated thread so the event loop never blocks on storage.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import faust

from schemas.codec import DecodeError
from schemas.kafka_security import KafkaSecurity
from schemas.topics import TopicNames
from schemas.records import (DEADLETTER_CODEC, decode_catalog, decode_frame, decode_host_window, encode_alert,
                             encode_anomaly, encode_host_window)
from sinks.clickhouse import ClickHouseWriter, StorageError, describe_dsn
from stream_jobs.engine.host_pipeline import EngineSettings
from stream_jobs.host_stage import HostStage
from stream_jobs.cluster_stage import ClusterStage
from stream_jobs.results import queue_catalog, queue_cluster_output, queue_frame, queue_output

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkerSettings:
    bootstrap: str
    clickhouse_dsn: str = field(repr=False)
    database: str = "reveal"
    app_id: str = "reveal-worker"
    engine: EngineSettings = field(default_factory=EngineSettings)
    topics: TopicNames = TopicNames()
    flush_every_s: float = 1.0
    report_every_s: float = 10.0
    security: KafkaSecurity = KafkaSecurity()

    @property
    def storage(self) -> str:
        """The ClickHouse DSN with any password hidden, for logs."""
        return describe_dsn(self.clickhouse_dsn)


@dataclass
class WorkerCounters:
    records: int = 0
    dead_letters: int = 0
    anomalies: int = 0
    storage_errors: int = 0


class WorkerShell:
    """The worker's state outside Faust: the host stage, the ClickHouse writer and its thread."""

    def __init__(self, settings: WorkerSettings):
        self.settings = settings
        self.counters = WorkerCounters()
        self.last_record_at: float | None = None
        self.storage_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="clickhouse")
        self.writer: ClickHouseWriter = self.storage_thread.submit(
            ClickHouseWriter, settings.clickhouse_dsn, settings.database).result()
        self.stage = HostStage(settings.engine, self.saved_baseline)
        self.cluster = ClusterStage()

    def saved_baseline(self, host: str, catalog_version: int) -> dict | None:
        """The latest baseline stored for this host and catalog, so a restarted worker does not learn it again."""
        _, rows = self.storage_thread.submit(
            self.writer.query, "SELECT state FROM baselines FINAL WHERE host = {host:String} AND "
            "catalog_version = {version:UInt32} ORDER BY saved_at DESC LIMIT 1",
            {"host": host, "version": catalog_version}).result()
        return json.loads(rows[0][0]) if rows else None

    def progress(self) -> str:
        """One line on what the worker has done so far, for operators watching its log."""
        c, stage = self.counters, self.stage.counters
        return (f"{c.records} records, {stage.frames} frames from {len(self.stage.pipelines)} hosts, "
                f"{c.anomalies} anomalies, {c.dead_letters} dead letters, {stage.held} frames held for a catalog, "
                f"{self.writer.pending_rows()} rows waiting for ClickHouse, {c.storage_errors} storage errors")

    def note_record(self) -> None:
        self.counters.records += 1
        self.last_record_at = time.monotonic()

    async def flush(self) -> None:
        try:
            await asyncio.get_running_loop().run_in_executor(self.storage_thread, self.writer.flush)
        except StorageError as error:
            self.counters.storage_errors += 1
            log.error("%s; %d rows kept for the next attempt", error, self.writer.pending_rows())

    def close(self) -> None:
        """Close open incidents, write what is left and release the storage thread (after the event loop stopped)."""
        queue_output(self.writer, self.stage.close())
        queue_cluster_output(self.writer, self.cluster.flush())
        self.storage_thread.submit(self.writer.close).result()
        self.storage_thread.shutdown()


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
    app = faust.App(settings.app_id, broker=f"kafka://{settings.bootstrap}", value_serializer="raw",
                    key_serializer="raw", store="memory://", web_enabled=False,
                    consumer_auto_offset_reset="earliest", topic_disable_leader=True,
                    producer_acks=-1, broker_commit_interval=1.0,
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
        queue_output(shell.writer, output)
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
        queue_cluster_output(shell.writer, output)
        await publish_findings(output)

    async def consume(stream, step: str, decode, handle, forward=publish) -> None:
        """Decode each record, dead-letter what cannot be decoded, hand the rest to the stage."""
        async for event in stream.events():
            shell.note_record()
            try:
                record = decode(event.value)
            except DecodeError as error:
                await reject(step, event, error)
                continue
            await forward(handle(record))

    def take_catalog(catalog):
        queue_catalog(shell.writer, catalog)
        return shell.stage.on_catalog(catalog)

    def take_frame(frame):
        queue_frame(shell.writer, frame)
        return shell.stage.on_frame(frame)

    @app.agent(catalogs)
    async def catalog_agent(stream):
        await consume(stream, "decode-catalog", decode_catalog, take_catalog)

    @app.agent(samples)
    async def host_agent(stream):
        await consume(stream, "decode-frame", decode_frame, take_frame)

    @app.agent(host_windows)
    async def cluster_agent(stream):
        await consume(stream, "decode-host-window", decode_host_window, shell.cluster.on_host_window, publish_cluster)

    @app.timer(settings.flush_every_s)
    async def flush_storage():
        await shell.flush()

    @app.timer(settings.report_every_s)
    async def report_progress():
        log.info("worker: %s", shell.progress())

    return app
