"""AgentMetrics in Prometheus form for an agent on canned /proc: ticks, frames and per-source reads, a publisher's
delivery and spool counters, every channel with its catalog labels, and the /metrics endpoint."""

import urllib.request

import pytest
from prometheus_client import CollectorRegistry as PrometheusRegistry
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from producers.agent import Agent, AgentSettings
from producers.metrics import AgentMetrics, counter_family, gauge_family, serve_metrics
from producers.publisher import KafkaFramePublisher
from tests.conftest import FIXTURES


class Frames(list):
    """A sink that keeps the frames handed to it."""

    def on_catalog(self, catalog) -> None:
        pass

    def on_frame(self, frame) -> None:
        self.append(frame)

    def end_block(self) -> None:
        pass


def canned_agent(sink) -> Agent:
    """An agent reading the memory and network sources of the captured /proc."""
    settings = AgentSettings(host="h1", procfs=str(FIXTURES / "proc"), sysfs=str(FIXTURES / "sysfs-laptop"),
                             source_groups=("memory", "network"))
    return Agent(settings, sink)


def scrape(collector) -> dict[str, list]:
    """The samples of each family the collector serves, by family name (parsed, so the text must be valid)."""
    registry = PrometheusRegistry()
    registry.register(collector)
    text = generate_latest(registry).decode()
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def test_frames_channels_and_each_sources_reads_are_served():
    agent = canned_agent(Frames())
    for _ in range(3):
        agent.sample_once()
    families = scrape(AgentMetrics(agent))
    agent.close()
    assert families["reveal_agent_frames"][0].value == 3 and families["reveal_agent_frames"][0].labels == {"host": "h1"}
    assert families["reveal_agent_channels"][0].value == len(agent.registry.catalog.channels) > 50
    reads = {sample.labels["source"]: sample.value for sample in families["reveal_agent_source_reads"]}
    assert reads == {source: count for source, (count, _) in agent.registry.read_costs().items()}
    assert reads["/proc/meminfo"] == 3, "the batched reads of a file are served too"
    assert "reveal_agent_frames_sent" not in families and "reveal_channel" not in families


def test_every_channel_is_served_with_its_catalog_labels():
    agent = canned_agent(Frames())
    agent.sample_once()
    samples = scrape(AgentMetrics(agent, channels=True))["reveal_channel"]
    agent.close()
    names = agent.registry.catalog.names
    assert [sample.labels["channel"] for sample in samples] == list(names)
    total = next(sample for sample in samples if sample.labels["channel"] == "mem.MemTotal")
    assert (total.labels["kind"], total.labels["unit"], total.labels["subsystem"]) == ("static", "bytes", "memory")
    assert total.value == agent.last_values[names.index("mem.MemTotal")] > 0


def test_a_publishers_delivery_and_spool_counters_are_served(tmp_path):
    publisher = KafkaFramePublisher("127.0.0.1:1", spool_dir=tmp_path / "spool", start_spooling=True)
    agent = canned_agent(publisher)
    try:
        for _ in range(4):
            agent.sample_once()
        families = scrape(AgentMetrics(agent, publisher))
    finally:
        agent.close()
        publisher.close(timeout_s=0.1)
    value = {name: samples[0].value for name, samples in families.items() if samples}
    assert value["reveal_agent_frames_spooled"] == 4 and value["reveal_agent_spool_records"] == 5  # and the catalog
    assert value["reveal_agent_frames_sent"] == value["reveal_agent_frames_dropped"] == 0
    assert value["reveal_agent_spool_bytes"] > 0


def test_one_series_families_carry_their_labels():
    counter = counter_family("reveal_agent_ticks", "Ticks.", 7, {"host": "h1"})
    gauge = gauge_family("reveal_agent_channels", "Channels.", 12.5, {"host": "h1"})
    assert [(s.name, s.labels, s.value) for s in counter.samples] == [("reveal_agent_ticks_total", {"host": "h1"}, 7)]
    assert [(s.name, s.labels, s.value) for s in gauge.samples] == [("reveal_agent_channels", {"host": "h1"}, 12.5)]


def test_metrics_are_served_over_http_and_a_taken_port_is_refused_in_one_sentence():
    agent = canned_agent(Frames())
    agent.sample_once()
    server = serve_metrics(AgentMetrics(agent), ("127.0.0.1", 0))
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.server_port}/metrics", timeout=10) as response:
            text = response.read().decode()
        with pytest.raises(ValueError, match=f"--metrics-listen 127.0.0.1:{server.server_port}: cannot listen there"):
            serve_metrics(AgentMetrics(agent), ("127.0.0.1", server.server_port))
    finally:
        server.shutdown()
        server.server_close()
        agent.close()
    assert 'reveal_agent_frames_total{host="h1"} 1.0' in text and "process_cpu_seconds_total" in text
