"""`curl HOST:PORT/metrics` on a running agent and worker: valid Prometheus exposition with their health series."""

import os
import subprocess
import sys
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.http_receiver import free_port
from tests.integration.worker_process import WorkerProcess, worker_args

pytestmark = pytest.mark.integration


def scrape(port: int) -> dict[str, list]:
    """The samples of each metric family served at the port, by family name (parsed, so the text must be valid)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def scrape_until(port: int, ready, timeout_s: float = 90.0) -> dict[str, list]:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            families = scrape(port)
            if ready(families):
                return families
        except OSError:
            pass
        assert time.monotonic() < deadline, "the metrics never showed what was expected"
        time.sleep(0.5)


def value(families: dict, name: str, **labels) -> float:
    return sum(s.value for s in families[name] if all(s.labels.get(k) == v for k, v in labels.items()))


def test_a_running_agent_serves_its_health_and_channels(kafka_bootstrap, topic_prefix, tmp_path):
    port = free_port()
    agent = subprocess.Popen([sys.executable, "-m", "reveal.cli", "agent", "--bootstrap", kafka_bootstrap,
                              "--topic-prefix", topic_prefix, "--host", "metrics-host", "--duration", "60",
                              "--spool-dir", str(tmp_path / "spool"), "--metrics-listen", f"127.0.0.1:{port}",
                              "--metrics-channels"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        families = scrape_until(port, lambda f: value(f, "reveal_agent_frames_sent") >= 20)
    finally:
        agent.terminate()
        agent.communicate(timeout=60)
    assert value(families, "reveal_agent_ticks", host="metrics-host") >= 20
    assert value(families, "reveal_agent_channels") > 50
    assert value(families, "reveal_agent_frames_dropped") == 0
    sources = {s.labels["source"] for s in families["reveal_agent_source_reads"] if s.name.endswith("_total")}
    assert {"cpu", "memory"} <= sources or len(sources) >= 5, sources
    assert all(s.value >= 0 for s in families["reveal_agent_source_read_seconds"])
    channels = {s.labels["channel"]: s for s in families["reveal_channel"]}
    assert len(channels) == value(families, "reveal_agent_channels")
    assert {"subsystem", "kind", "unit", "device"} <= set(next(iter(channels.values())).labels)
    assert value(families, "process_resident_memory_bytes") > 0


def test_a_running_worker_serves_its_health_and_lag(kafka_bootstrap, topic_prefix, tmp_path):
    port = free_port()
    agent = subprocess.Popen([sys.executable, "-m", "reveal.cli", "agent", "--bootstrap", kafka_bootstrap,
                              "--topic-prefix", topic_prefix, "--host", "metrics-host", "--duration", "40",
                              "--no-spool"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env={**os.environ, "PYTHONUNBUFFERED": "1"})
    worker = WorkerProcess(tmp_path / "worker.log", *worker_args(
        kafka_bootstrap, f"chdb://{tmp_path / 'chdb'}", topic_prefix, "metrics", "--metrics-listen",
        f"127.0.0.1:{port}"))
    try:
        families = scrape_until(port, lambda f: value(f, "reveal_worker_windows") >= 3
                                and "reveal_worker_consumer_lag" in f and f["reveal_worker_consumer_lag"])
    finally:
        agent.terminate()
        agent.wait(60)
        worker.signal(15)
        worker.finish()
    # the agent sends a second of frames (ten ticks) as one record; host windows and the catalog are records too
    assert value(families, "reveal_worker_records") >= value(families, "reveal_worker_frames") / 10 > 0
    assert value(families, "reveal_worker_hosts") == 1
    assert value(families, "reveal_worker_dead_letters") == 0
    assert value(families, "reveal_worker_rows_written", table="frames") > 0
    lag = families["reveal_worker_consumer_lag"]
    assert {s.labels["topic"] for s in lag} >= {f"{topic_prefix}reveal.samples"}
    assert all(s.value >= 0 for s in lag)
    for name in ("reveal_worker_incidents_open", "reveal_worker_storage_pending_rows", "reveal_worker_storage_errors"):
        assert name in families, name
