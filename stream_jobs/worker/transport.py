"""Faust's Kafka transport with a short fetch wait, so that frames reach the worker within a fraction of a second,
and seeks made on the consumer's own thread.

aiokafka sends at most one fetch at a time to a broker, for the partitions whose earlier records have all been
handed over. Right after the worker takes a large batch of frames, that fetch may cover only quiet partitions (the
catalog, the host-window summaries), and the broker holds it until data arrives there or the fetch wait passes;
the busy sample partitions wait behind it. Faust fixes that wait at 1.5 s: at 150 hosts frames reached the worker
~1 s after they were published while its event loop was half idle (`reveal bench pipeline --hosts 150`). A short
wait costs an idle worker a few small requests per second.

Faust seeks by calling aiokafka from the worker's event loop while aiokafka's fetcher runs on the consumer thread;
a seek that lands while the fetcher drains its buffer removes a partition under it (`KeyError` in
`Fetcher.fetched_records`, the worker stops). Seeks are therefore handed to the consumer thread.
"""

from __future__ import annotations

import faust
from faust.transport.drivers import aiokafka as faust_aiokafka

FETCH_WAIT_MS = 100


class PromptConsumerThread(faust_aiokafka.AIOKafkaConsumerThread):
    """Faust's consumer thread, whose aiokafka consumer waits at most FETCH_WAIT_MS for a fetch to fill."""

    def _create_worker_consumer(self, transport):
        consumer = super()._create_worker_consumer(transport)
        consumer._fetch_max_wait_ms = FETCH_WAIT_MS  # read when the consumer starts and builds its fetcher
        return consumer


class PromptConsumer(faust_aiokafka.Consumer):
    async def _seek(self, partition, offset: int) -> None:
        """Seek on the consumer thread, where aiokafka's fetcher reads and changes the same buffers."""
        await self._thread.call_thread(self._thread.seek, partition, offset)

    def _new_consumer_thread(self) -> PromptConsumerThread:
        return PromptConsumerThread(self, loop=self.loop, beacon=self.beacon)


class PromptTransport(faust_aiokafka.Transport):
    Consumer = PromptConsumer


class PromptApp(faust.App):
    """A Faust app that consumes through PromptTransport (producing is unchanged)."""

    def _new_transport(self):
        return PromptTransport(self.conf.broker_consumer, self)
