"""The distributed shell's Faust app, built (not started) for a deployment's topics over a real worker shell: each
agent reads its topic, the shell's acknowledgements and log ends go through the app's consumer, its fetches and
batches are sized for a fleet, and its state stays under the user's cache."""

import asyncio

from schemas.topics import TopicNames
from sinks.landing import open_landing
from stream_jobs.worker.app import FETCH_BYTES_PER_PARTITION, PRODUCER_BATCH_BYTES, create_app
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
        assert (tmp_path / ".cache" / "reveal" / "faust" / "reveal-app-test").is_dir()
    finally:
        shell.close(close_incidents=False)
