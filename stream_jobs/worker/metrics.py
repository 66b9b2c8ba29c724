"""The worker's own health in Prometheus form (`reveal worker --metrics-listen`): what it consumed, scored and
stored, what waits for ClickHouse, and how far it is behind each partition. Read from the worker's counters at each
scrape by a prometheus_client custom collector; names follow Prometheus conventions (`reveal_worker_…`)."""

from __future__ import annotations

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from producers.metrics import counter_family, gauge_family

__all__ = ["WorkerMetrics"]


class WorkerMetrics(Collector):
    """Records, frames, windows, anomalies, dead letters, open incidents, the storage queue and its failures, rows
    written per table, and consumer lag per topic partition."""

    def __init__(self, shell, group: str):
        self.shell, self.labels = shell, {"group": group}

    def collect(self):
        yield from self._flow()
        yield from self._storage()
        yield self._lag()

    def _flow(self):
        shell, labels = self.shell, self.labels
        counters, stage = shell.counters, shell.stage
        yield counter_family("reveal_worker_records", "Kafka records consumed.", counters.records, labels)
        yield counter_family("reveal_worker_frames", "Frames handed to the host stage.", stage.counters.frames, labels)
        yield counter_family("reveal_worker_windows", "Host windows scored and stored.",
                             shell.store.rows_written["windows"], labels)
        yield counter_family("reveal_worker_anomalies", "Anomalies published.", counters.anomalies, labels)
        yield counter_family("reveal_worker_dead_letters", "Records sent to the dead-letter topic.",
                             counters.dead_letters, labels)
        yield counter_family("reveal_worker_rereads", "Partitions read again from the expected offset after a gap.",
                             counters.rereads, labels)
        yield gauge_family("reveal_worker_hosts", "Hosts whose frames this worker scores.", len(stage.pipelines),
                           labels)
        yield gauge_family("reveal_worker_incidents_open", "Incidents open now, host and cluster ones.",
                           shell.cluster.incidents.open_count(), labels)
        yield gauge_family("reveal_worker_records_held", "Records held uncommitted for windows in progress.",
                           shell.releases.held(), labels)

    def _storage(self):
        shell, labels = self.shell, self.labels
        yield gauge_family("reveal_worker_storage_pending_rows", "Rows queued for ClickHouse.",
                           shell.store.pending_rows(), labels)
        yield counter_family("reveal_worker_storage_errors", "Failed attempts to write to ClickHouse (each retried).",
                             shell.counters.storage_errors, labels)
        yield gauge_family("reveal_worker_storage_failing", "1 while ClickHouse refuses writes and rows wait.",
                           float(shell.backoff.failing), labels)
        yield gauge_family("reveal_worker_consumption_paused", "1 while the storage queue is full and input waits.",
                           float(shell.paused), labels)
        if shell.embedded_storage_bytes is not None:
            yield gauge_family("reveal_worker_embedded_clickhouse_memory_bytes",
                               "Memory the embedded ClickHouse (chDB) tracks inside this worker, at the last flush.",
                               shell.embedded_storage_bytes, labels)
        rows = CounterMetricFamily("reveal_worker_rows_written", "Rows written to ClickHouse, per table.",
                                   labels=[*labels, "table"])
        for table, count in shell.store.rows_written.items():
            rows.add_metric([*labels.values(), table], count)
        yield rows

    def _lag(self) -> GaugeMetricFamily:
        family = GaugeMetricFamily("reveal_worker_consumer_lag", "Records in each assigned partition not yet read.",
                                   labels=[*self.labels, "topic", "partition"])
        for tp, unread in self.shell.unread_records().items():
            family.add_metric([*self.labels.values(), tp.topic, str(tp.partition)], unread)
        return family
