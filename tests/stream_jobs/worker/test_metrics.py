"""The worker's health in Prometheus form, read from a real worker shell over embedded ClickHouse at each scrape: what
it consumed, what waits for ClickHouse and what was written per table, and how far it is behind each partition."""

import asyncio

from faust.types import TP
from prometheus_client import CollectorRegistry

from sinks.landing import open_landing
from stream_jobs.worker.metrics import WorkerMetrics
from stream_jobs.worker.shell import WorkerSettings, WorkerShell


def test_a_scrape_reads_the_workers_counters_its_storage_queue_and_its_lag(chdb_dsn, database):
    shell = WorkerShell(WorkerSettings("127.0.0.1:1"), lambda: open_landing(chdb_dsn, database))
    registry = CollectorRegistry()
    registry.register(WorkerMetrics(shell, "g1"))

    def sample(name: str, **labels):
        return registry.get_sample_value(name, {"group": "g1", **labels})

    shell.counters.records, shell.counters.dead_letters = 7, 2
    shell.store.writer.add("frames", [["h", "c", 0, 1, 1, [1.0]]])
    shell.cursors.start(TP("reveal.samples", 3), 10)
    shell.cursors.start(TP("reveal.samples", 4), 0)
    shell.highwater = lambda tp: {3: 15}.get(tp.partition)
    try:
        assert (sample("reveal_worker_records_total"), sample("reveal_worker_dead_letters_total")) == (7, 2)
        assert sample("reveal_worker_storage_pending_rows") == 1 and sample("reveal_worker_consumption_paused") == 0
        assert sample("reveal_worker_consumer_lag", topic="reveal.samples", partition="3") == 5
        assert sample("reveal_worker_consumer_lag", topic="reveal.samples", partition="4") is None, "no log end yet"
        assert shell.unread_records() == {TP("reveal.samples", 3): 5}
        assert sample("reveal_worker_rows_written_total", table="frames") == 0
        assert sample("reveal_worker_embedded_clickhouse_memory_bytes") is None, "not read before the first flush"
        asyncio.run(shell.flush())
        assert sample("reveal_worker_rows_written_total", table="frames") == 1
        assert sample("reveal_worker_embedded_clickhouse_memory_bytes") > 0, "chDB tracks what the insert took"
        assert sample("reveal_worker_storage_pending_rows") == 0 and sample("reveal_worker_hosts") == 0
    finally:
        shell.close(close_incidents=False)
