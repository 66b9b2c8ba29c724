"""The distributed shell: a Faust app whose agents feed Kafka records to the host and cluster stages.

The host agent (samples, keyed by host) publishes anomalies, alerts and one summary per host-window to
reveal.host-windows keyed by cluster; the cluster agent compares each host with its peers and classifies
retransmissions.

Each agent only decodes, calls the stage and forwards what it returns (stream_jobs/worker/agents.py); every
decision is in the engine. Storage calls run on one dedicated thread so the event loop never blocks on them
(stream_jobs/worker/shell.py). A record's offset is committed only once its results are stored and no state in
memory depends on it (stream_jobs/worker/offset_releases.py), so a worker killed at any instant, or a host moved to
another worker, resumes where nothing is lost; records may be consumed twice, and the tables' keys store them once.
Each partition is processed in offset order from where its last owner committed (stream_jobs/worker/offsets.py).
While storage refuses inserts, rows stay queued, attempts back off exponentially, and consumption pauses when the
queue is full.
"""

from __future__ import annotations

import logging
from pathlib import Path

import faust

from schemas.records import decode_catalog, decode_frames, decode_host_window
from stream_jobs.allocator import release_free_memory
from stream_jobs.worker.agents import RecordHandler
from stream_jobs.worker.offsets import PartitionOffsets
from stream_jobs.worker.shell import WorkerSettings, WorkerShell
from stream_jobs.worker.transport import PromptApp

log = logging.getLogger(__name__)

# A producer batch holds several host-window summaries (20.6 KB each at 700 channels), where Faust's 16 KB default
# held none whole; kept under the broker's 1 MB message.max.bytes.
PRODUCER_BATCH_BYTES = 512 << 10
# How much one fetch may bring of each partition. With Faust's 1 MB (~180 frames of 700 channels) and a frame per
# message, a worker took at most ~1,200 frames per second, its threads waiting in select; 4 MB kept up with 150 hosts
# at 10 Hz. An agent sends a second of frames per message by default, and with 2 MB one worker keeps up with the same
# 150 hosts while holding less fetched and decoded data: `reveal bench pipeline --hosts 150 --duration 120` stored
# 1.13 M channel-samples/s with 2.25 MB of memory per host, against 2.49 MB with 4 MB. With a frame per message
# (`--publish-every 0`) one worker falls behind at 150 hosts with either size (0.92 and 0.96 M/s), on its CPU.
FETCH_BYTES_PER_PARTITION = 2 << 20
# What the worker publishes is compressed in batches gathered for up to PRODUCER_LINGER_S. A cluster's host-window
# summaries share one partition and each repeats its host's channel names (20.6 KB at 700 channels), so a 150-host
# cluster wrote 3.1 MB/s there against 1.4 MB/s on each of the 6 sample partitions. A worker that ran behind got at
# most FETCH_BYTES_PER_PARTITION of every partition per fetch: the summaries fell 0.4 s further behind the frames
# each second and no incident opened (`reveal bench pipeline --hosts 150 --channels 700 --duration 120`). In batches
# of ~15, with its in-band departures at 0 (stream_jobs/records.py, outside_band), LZ4 keeps ~7 KB of a summary, and
# the summaries stay 3-5 s behind their production however long the worker runs behind.
PRODUCER_COMPRESSION = "lz4"
PRODUCER_LINGER_S = 0.1
RELEASE_MEMORY_EVERY_S = 2.0  # a few milliseconds each time (stream_jobs/allocator.py)


def create_app(settings: WorkerSettings, shell: WorkerShell) -> faust.App:
    """The Faust app with the catalog, host-stage and cluster agents and the storage flush timer."""
    app = _faust_app(settings)
    topics = settings.topics

    def topic(name: str):
        return app.topic(name, key_type=bytes, value_type=bytes, internal=False)

    samples, catalogs = topic(topics.samples), topic(topics.catalog)
    anomalies, alerts, host_windows = topic(topics.anomalies), topic(topics.alerts), topic(topics.host_windows)
    offsets = PartitionOffsets(app, shell)
    shell.acknowledge, shell.highwater = offsets.acknowledge, offsets.highwater
    records = RecordHandler(shell, offsets, anomalies, alerts, host_windows, topic(topics.deadletter))
    _add_agents(app, shell, records, samples, catalogs, host_windows)
    _add_rebalance_handlers(app, shell, offsets)
    _add_timers(app, settings, shell, offsets)
    return app


def _faust_app(settings: WorkerSettings) -> PromptApp:
    state_dir = Path.home() / ".cache" / "reveal" / "faust" / settings.app_id
    state_dir.mkdir(parents=True, exist_ok=True)
    return PromptApp(settings.app_id, broker=f"kafka://{settings.bootstrap}", value_serializer="raw",
                     key_serializer="raw", store="memory://", web_enabled=False,
                     consumer_auto_offset_reset="earliest", topic_disable_leader=True,
                     producer_acks=-1, producer_max_batch_size=PRODUCER_BATCH_BYTES,
                     producer_compression_type=PRODUCER_COMPRESSION, producer_linger=PRODUCER_LINGER_S,
                     consumer_max_fetch_size=FETCH_BYTES_PER_PARTITION,
                     broker_commit_interval=1.0, stream_wait_empty=False,
                     broker_session_timeout=settings.session_timeout_s,
                     broker_credentials=settings.security.faust_credentials(), datadir=str(state_dir))


def _add_agents(app: faust.App, shell: WorkerShell, records: RecordHandler, samples, catalogs, host_windows) -> None:
    @app.agent(catalogs)
    async def catalog_agent(stream):
        await records.consume(stream, "decode-catalog", decode_catalog, records.take_catalog)

    @app.agent(samples)
    async def host_agent(stream):
        await records.consume(stream, "decode-frame", decode_frames, records.take_frames, hold=shell.hold_frames)

    @app.agent(host_windows)
    async def cluster_agent(stream):
        await records.consume(stream, "decode-host-window", decode_host_window, shell.cluster.on_host_window,
                              records.publish_cluster)


def _add_rebalance_handlers(app: faust.App, shell: WorkerShell, offsets: PartitionOffsets) -> None:
    @app.on_partitions_revoked.connect
    async def drop_revoked_hosts(sender, revoked, **kwargs):
        if revoked:
            shell.forget_hosts()

    @app.on_partitions_assigned.connect
    async def position_assigned(sender, assigned, **kwargs):
        if assigned:
            await offsets.position_partitions(assigned)


def _add_timers(app: faust.App, settings: WorkerSettings, shell: WorkerShell, offsets: PartitionOffsets) -> None:
    @app.timer(settings.flush_every_s)
    async def flush_storage():
        await shell.flush()
        await offsets.seek_stalled()

    @app.timer(settings.report_every_s)
    async def report_progress():
        log.info("worker: %s", shell.progress())

    @app.timer(RELEASE_MEMORY_EVERY_S)
    async def release_memory():
        release_free_memory()
