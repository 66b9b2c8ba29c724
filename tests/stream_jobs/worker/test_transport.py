"""The worker's Kafka transport against the real broker: its consumer fetches with the short wait, and seeks run on
the consumer's own thread."""

import asyncio
import threading

import pytest
from faust.types import TP

from stream_jobs.worker.transport import FETCH_WAIT_MS, PromptApp, PromptConsumerThread

pytestmark = pytest.mark.integration


def test_worker_consumer_fetches_with_the_short_wait(kafka_bootstrap):
    """The started aiokafka consumer's fetcher waits FETCH_WAIT_MS, not Faust's 1.5 s."""

    async def started_fetch_wait() -> int:
        app = PromptApp("reveal-fetch-wait-test", broker=f"kafka://{kafka_bootstrap}", web_enabled=False,
                        store="memory://")
        thread = app.consumer._thread
        assert isinstance(thread, PromptConsumerThread)
        consumer = thread._create_worker_consumer(app.transport)
        await consumer.start()
        try:
            return consumer._fetcher._fetch_max_wait_ms
        finally:
            await consumer.stop()

    assert FETCH_WAIT_MS < 1500
    assert asyncio.run(started_fetch_wait()) == FETCH_WAIT_MS


def test_seeks_run_on_the_consumer_thread(kafka_bootstrap):
    """A seek from the worker's event loop reaches aiokafka on the consumer thread, where its fetcher runs."""
    topic = "reveal-seek-thread-test"

    async def seeking_threads() -> tuple[list[int], int]:
        app = PromptApp("reveal-seek-thread-test", broker=f"kafka://{kafka_bootstrap}", web_enabled=False,
                        store="memory://")
        app.topic(topic)
        thread = app.consumer._thread
        await thread.start()
        try:
            seen = []
            thread._ensure_consumer().seek = lambda tp, offset: seen.append(threading.get_ident())
            await app.consumer.seek(TP(topic, 0), 0)
            return seen, thread._thread.ident
        finally:
            await thread.stop()

    seen, consumer_thread = asyncio.run(seeking_threads())
    assert seen == [consumer_thread] and consumer_thread != threading.get_ident()
