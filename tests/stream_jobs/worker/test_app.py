"""The distributed shell's Faust app, built (not started) for a deployment's topics over a real worker shell: each
agent reads its topic, the shell's acknowledgements and log ends go through the app's consumer, its fetches and
batches are sized for a fleet, and its state stays under the user's cache."""

import asyncio

import numpy as np
from aiokafka.codec import lz4_encode

from producers.synthetic import synthetic_catalog, synthetic_frames
from schemas.agent_records import encode_frame
from schemas.records import HostWindow, encode_host_window
from schemas.topics import TopicNames, topic_specs
from sinks.landing import open_landing
from stream_jobs.records import outside_band
from stream_jobs.worker.app import (FETCH_BYTES_PER_PARTITION, PRODUCER_BATCH_BYTES, PRODUCER_COMPRESSION,
                                    PRODUCER_LINGER_S, create_app)
from stream_jobs.worker.offsets import PartitionOffsets
from stream_jobs.worker.shell import WorkerSettings, WorkerShell
from stream_jobs.worker.transport import PromptApp


def test_each_agent_reads_its_topic_and_the_shell_reaches_the_apps_consumer(chdb_dsn, database, tmp_path,
                                                                             monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    settings = WorkerSettings("127.0.0.1:1", app_id="reveal-app-test", topics=TopicNames("app-test."))
    shell = WorkerShell(settings, lambda: open_landing(chdb_dsn, database))

    async def built():
        return create_app(settings, shell)

    try:
        app = asyncio.run(built())
        assert isinstance(app, PromptApp)
        read = {name.rsplit(".", 1)[-1]: set(agent.channel.topics) for name, agent in app.agents.items()}
        assert read == {"catalog_agent": {"app-test.reveal.catalog"}, "host_agent": {"app-test.reveal.samples"},
                        "cluster_agent": {"app-test.reveal.host-windows"}}
        offsets = shell.acknowledge.__self__
        assert isinstance(offsets, PartitionOffsets) and shell.highwater.__self__ is offsets and offsets.app is app
        assert app.conf.producer_max_batch_size == PRODUCER_BATCH_BYTES
        assert app.conf.consumer_max_fetch_size == FETCH_BYTES_PER_PARTITION
        assert app.conf.producer_compression_type == PRODUCER_COMPRESSION
        assert app.conf.producer_linger == PRODUCER_LINGER_S
        assert (tmp_path / ".cache" / "reveal" / "faust" / "reveal-app-test").is_dir()
    finally:
        shell.close(close_incidents=False)


def test_a_cluster_s_summaries_take_less_of_their_partition_than_its_frames_take_of_theirs():
    """A worker that runs behind gets the same bytes of every partition per fetch, so a cluster's host-window
    summaries (all on one partition, one per host each second) keep pace with its frames (spread over the sample
    partitions) only while they take fewer bytes per second there: batched and compressed as the worker publishes
    them, they do for a 150-host cluster at 700 channels and 10 Hz; published one by one, uncompressed, they would
    take twice as much as the frames."""
    hosts, partitions, interval_s = 150, topic_specs(TopicNames())[0].partitions, 0.1
    catalog = synthetic_catalog("bench-host-000", "bench", gauges=420, counters=279, interval_s=interval_s)
    frames = [encode_frame(frame) for frame in synthetic_frames(catalog, 10**18, 40)]
    frame_bytes = len(lz4_encode(b"".join(frames))) / len(frames)  # the agent's producer compresses with LZ4 too
    rng = np.random.default_rng(7)
    summaries = [encode_host_window(HostWindow(
        f"bench-host-{index:03d}", "bench", 90, 10**18, 10**18 + 3 * 10**9, 1, catalog.names,
        rng.normal(40.0, 1.0, len(catalog.names)), False, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
        outside_band(rng.normal(0.0, 0.5, len(catalog.names))))) for index in range(hosts)]
    per_batch = round(hosts * PRODUCER_LINGER_S)  # each host sends one summary a second
    compress = {"lz4": lz4_encode}.get(PRODUCER_COMPRESSION, bytes)
    batches = [compress(b"".join(summaries[i:i + per_batch])) for i in range(0, hosts, per_batch)]
    summaries_per_s = sum(len(batch) for batch in batches)
    frames_per_s_per_partition = hosts / partitions * frame_bytes / interval_s
    assert summaries_per_s < 0.8 * frames_per_s_per_partition
    assert sum(len(summary) for summary in summaries) > 2 * frames_per_s_per_partition
