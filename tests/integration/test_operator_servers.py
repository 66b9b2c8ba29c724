"""Reveal against the operators' real servers: Prometheus scraping a running agent and worker with the shipped
infra/prometheus/prometheus.yml, and Alertmanager taking `reveal alerts` events through its own API."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from schemas.records import Alert, encode_alert
from schemas.topics import TopicNames, ensure_topics
from tests.http_receiver import free_port
from tests.integration.kafka_io import publish
from tests.integration.operator_servers import alertmanager, prometheus
from tests.integration.worker_process import WorkerProcess, worker_args

pytestmark = pytest.mark.integration

SHIPPED_CONFIG = Path(__file__).resolve().parents[2] / "infra" / "prometheus" / "prometheus.yml"


def pointed_at(agent_port: int, worker_port: int) -> str:
    """The shipped Prometheus settings with its targets on this machine's ports and a 1 s scrape."""
    config = SHIPPED_CONFIG.read_text()
    for target, port in (("agent:9101", agent_port), ("worker:9102", worker_port)):
        assert target in config, f"{SHIPPED_CONFIG} no longer scrapes {target}"
        config = config.replace(target, f"127.0.0.1:{port}")
    return config.replace("scrape_interval: 15s", "scrape_interval: 1s")


def series(server, query: str) -> list[dict]:
    answer = server.get("/api/v1/query", query=query)
    return answer["data"]["result"] if answer and answer.get("status") == "success" else []


def test_prometheus_scrapes_the_agent_and_the_worker_with_the_shipped_settings(kafka_bootstrap, topic_prefix,
                                                                               tmp_path):
    agent_port, worker_port = free_port(), free_port()
    agent = subprocess.Popen([sys.executable, "-m", "reveal", "agent", "--bootstrap", kafka_bootstrap,
                              "--topic-prefix", topic_prefix, "--host", "scraped-host", "--duration", "90",
                              "--no-spool", "--metrics-listen", f"127.0.0.1:{agent_port}"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = WorkerProcess(tmp_path / "worker.log", *worker_args(
        kafka_bootstrap, f"chdb://{tmp_path / 'chdb'}", topic_prefix, "scraped", "--metrics-listen",
        f"127.0.0.1:{worker_port}"))
    server = prometheus(tmp_path, pointed_at(agent_port, worker_port))
    try:
        server.wait_until(lambda: len(series(server, 'up{job=~"reveal-agent|reveal-worker"} == 1')) == 2, 60,
                          "Prometheus never saw both targets up")
        server.wait_until(lambda: series(server, "reveal_worker_windows_total > 0"), 90,
                          "the worker's windows never reached Prometheus")
        frames = series(server, 'reveal_agent_frames_sent_total{host="scraped-host"}')
        windows = series(server, "reveal_worker_windows_total")
    finally:
        server.stop()
        agent.terminate()
        agent.wait(60)
        worker.signal(15)
        worker.finish()
    assert frames and float(frames[0]["value"][1]) > 0
    assert frames[0]["metric"]["job"] == "reveal-agent"
    assert windows and windows[0]["metric"]["job"] == "reveal-worker" and float(windows[0]["value"][1]) > 0


def incident(state: str, start_ns: int, end_ns: int) -> Alert:
    return Alert("h1/anomaly:cpu", "h1", "c1", state, start_ns, end_ns, 8.0, "cpu",
                 "critical cpu anomaly on h1 over 3 windows, peak severity 8.0 of 10; cpu.user.all mean z=+40.0",
                 "look for a process outside the job")


def held_incidents(server) -> list[dict]:
    """The alerts Alertmanager holds as not yet resolved (its API leaves out those whose end has passed)."""
    return [a for a in server.get("/api/v2/alerts") or [] if a["labels"].get("incident") == "h1/anomaly:cpu"]


def test_alertmanager_takes_an_incident_from_reveal_alerts_and_resolves_it(kafka_bootstrap, topic_prefix,
                                                                           tmp_path):
    topics = TopicNames(topic_prefix)
    ensure_topics({"bootstrap.servers": kafka_bootstrap}, topics)
    server = alertmanager(tmp_path)
    forwarder = subprocess.Popen([sys.executable, "-m", "reveal", "alerts", "--bootstrap", kafka_bootstrap,
                                  "--topic-prefix", topic_prefix, "--webhook", f"{server.url}/api/v2/alerts",
                                  "--webhook-format", "alertmanager-api", "--from-beginning",
                                  "--group", f"{topic_prefix}am", "--duration", "90"],
                                 stderr=subprocess.PIPE, text=True)
    try:
        began_ns = time.time_ns() - 60 * 10**9
        opened = incident("open", began_ns, began_ns + 3 * 10**9)
        publish(kafka_bootstrap, topics.alerts, [(b"h1", encode_alert(opened))])
        server.wait_until(lambda: bool(held_incidents(server)), 60, "Alertmanager never held the open incident")
        [held] = held_incidents(server)
        publish(kafka_bootstrap, topics.alerts, [(b"h1", encode_alert(incident("closed", began_ns, time.time_ns())))])
        server.wait_until(lambda: not held_incidents(server), 60, "Alertmanager never resolved the closed incident")
    finally:
        forwarder.terminate()
        stderr = forwarder.communicate(timeout=60)[1]
        server.stop()
    assert held["labels"] == {"alertname": "RevealIncident", "incident": "h1/anomaly:cpu", "host": "h1",
                              "cluster": "c1", "subsystem": "cpu", "kind": "anomaly", "severity": "critical"}, stderr
    assert held["status"]["state"] == "active" and held["annotations"]["reveal_state"] == "open"
    assert held["startsAt"].startswith(time.strftime("%Y-%m-%dT", time.gmtime(began_ns / 1e9)))
