"""The agent's own health, and optionally its channels, in Prometheus form (`reveal agent --metrics-listen`).

A prometheus_client custom collector reads the agent's counters at each scrape, so sampling pays nothing for it.
Names follow Prometheus conventions: `reveal_agent_…`, counters ending in `_total`, times in seconds.
"""

from __future__ import annotations

import logging

from prometheus_client import CollectorRegistry as PrometheusRegistry
from prometheus_client import ProcessCollector, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["AgentMetrics", "counter_family", "gauge_family", "serve_metrics"]

log = logging.getLogger(__name__)

class AgentMetrics(Collector):
    """Ticks, lag, channels, frames sent, spooled and dropped, and per-source reads, failures and read time; with
    `channels`, every channel's latest value as `reveal_channel{channel, subsystem, kind, unit, device}`."""

    def __init__(self, agent, publisher=None, channels: bool = False):
        self.agent, self.publisher, self.channels = agent, publisher, channels

    def collect(self):
        yield from self._ticks()
        yield from self._frames()
        yield from self._sources()
        if self.channels:
            yield self._channel_values()

    def _ticks(self):
        stats, catalog, host = self.agent.stats, self.agent.registry.catalog, {"host": self.agent.settings.host}
        yield counter_family("reveal_agent_ticks", "Sampling ticks run.", stats.ticks, host)
        yield counter_family("reveal_agent_ticks_skipped", "Ticks skipped because the one before overran.",
                             stats.skipped, host)
        yield gauge_family("reveal_agent_tick_lag_seconds", "How late the latest tick started.", stats.last_lag_s, host)
        yield gauge_family("reveal_agent_tick_lag_max_seconds", "The latest start of any tick so far.",
                           stats.max_lag_s, host)
        yield gauge_family("reveal_agent_channels", "Channels in the current catalog.", len(catalog.channels), host)
        yield gauge_family("reveal_agent_catalog_version", "Version of the current catalog (it grows on every "
                           "change).", catalog.version, host)

    def _frames(self):
        host = {"host": self.agent.settings.host}
        yield counter_family("reveal_agent_frames", "Frames sampled and handed on.", self.agent.sequence, host)
        if self.publisher is None:
            return
        stats, spool = self.publisher.stats, self.publisher.spool
        yield counter_family("reveal_agent_frames_sent", "Frames Kafka acknowledged.", stats.delivered, host)
        yield counter_family("reveal_agent_delivery_failures", "Frames Kafka refused or timed out (kept for a "
                             "retry).", stats.failed, host)
        yield counter_family("reveal_agent_frames_spooled", "Frames written to the disk spool while Kafka was away.",
                             stats.spooled, host)
        yield counter_family("reveal_agent_frames_dropped", "Messages (a block of frames each) dropped "
                             "because the spool was full.",
                             spool.dropped_records if spool is not None else 0, host)
        yield gauge_family("reveal_agent_spool_records", "Records waiting for Kafka: in the spool or to be replayed.",
                           self.publisher.backlog(), host)
        yield gauge_family("reveal_agent_spool_bytes", "Size of the disk spool.",
                           spool.size_bytes if spool is not None else 0, host)

    def _sources(self):
        labels = ["host", "source"]
        reads = CounterMetricFamily("reveal_agent_source_reads", "Reads of each source.", labels=labels)
        failures = CounterMetricFamily("reveal_agent_source_read_failures",
                                       "Reads of each source that failed (its channels NaN until it recovers).",
                                       labels=labels)
        seconds = CounterMetricFamily("reveal_agent_source_read_seconds", "Time spent reading each source.",
                                      labels=labels)
        interval = GaugeMetricFamily("reveal_agent_source_interval_seconds", "How often each source is read now.",
                                     labels=labels)
        host, tick_s = self.agent.settings.host, self.agent.settings.interval_s
        costs = self.agent.registry.read_costs()
        for source in self.agent.registry.sources:
            name = [host, source.collector.source]
            source_reads, source_seconds = costs[source.collector.source]
            reads.add_metric(name, source_reads)
            failures.add_metric(name, source.failures)
            seconds.add_metric(name, source_seconds)
            interval.add_metric(name, source.every_ticks * tick_s)
        yield from (reads, failures, seconds, interval)

    def _channel_values(self) -> GaugeMetricFamily:
        family = GaugeMetricFamily("reveal_channel", "Each channel's latest value, in its unit (counters are "
                                   "cumulative: take rate() of them).",
                                   labels=["host", "channel", "subsystem", "kind", "unit", "device"])
        values, host = self.agent.last_values, self.agent.settings.host
        if values is None:
            return family
        for channel, value in zip(self.agent.registry.catalog.channels, values):
            family.add_metric([host, channel.name, channel.subsystem, channel.kind, channel.unit,
                               channel.device], float(value))
        return family


def counter_family(name: str, text: str, value: float, labels: dict[str, str]) -> CounterMetricFamily:
    """A counter of one series with these labels."""
    family = CounterMetricFamily(name, text, labels=list(labels))
    family.add_metric(list(labels.values()), value)
    return family


def gauge_family(name: str, text: str, value: float, labels: dict[str, str]) -> GaugeMetricFamily:
    """A gauge of one series with these labels."""
    family = GaugeMetricFamily(name, text, labels=list(labels))
    family.add_metric(list(labels.values()), value)
    return family


def serve_metrics(collector: Collector, address: tuple[str, int]):
    """Serve `collector` and this process's CPU, memory and file descriptors at http://HOST:PORT/metrics, from a
    daemon thread; returns the server (its port is the one bound, when 0 was asked for)."""
    registry = PrometheusRegistry()
    ProcessCollector(registry=registry)
    registry.register(collector)
    try:
        server, _ = start_http_server(address[1], address[0], registry)
    except OSError as error:
        raise ValueError(f"--metrics-listen {address[0]}:{address[1]}: cannot listen there "
                         f"({error.strerror or error})") from None
    log.info("metrics at http://%s:%d/metrics", address[0], server.server_port)
    return server
