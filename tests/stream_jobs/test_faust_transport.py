import asyncio

from stream_jobs.faust_transport import FETCH_WAIT_MS, PromptApp, PromptConsumerThread


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
