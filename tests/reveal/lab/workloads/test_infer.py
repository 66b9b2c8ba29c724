"""Inference as separate processes over 127.0.0.1: the client logs the latency of each request, and its request rate
bursts on schedule."""

from __future__ import annotations

import signal

import pytest

from reveal.lab.workloads import ClientSettings, Endpoint, request_rate
from tests.reveal.lab.workloads.running import LOCAL, finish, free_port, read_lines, start_workload

pytestmark = pytest.mark.timeout(30)


def test_infer_client_logs_the_latency_of_each_request(tmp_path):
    server = Endpoint(LOCAL, free_port())
    log = tmp_path / "client.jsonl"
    serving = start_workload("infer", "serve", "--listen", server, "--response-kb", 8, "--duration", 20)
    client = start_workload("infer", "client", "--server", server, "--rate", 40, "--duration", 2, "--log", log)
    status, stderr = finish(client)
    assert status == 0, stderr
    serving.send_signal(signal.SIGTERM)
    status, stderr = finish(serving)
    assert status == 0, stderr
    lines = read_lines(log)
    assert 40 <= len(lines) <= 90
    assert [line["request"] for line in lines] == list(range(len(lines)))
    assert all(0 < line["latency_s"] < 1 for line in lines)
    assert {(line["request_bytes"], line["response_bytes"]) for line in lines} == {(4096, 8192)}


def test_request_rate_bursts_for_burst_s_every_burst_every():
    settings = ClientSettings(Endpoint(LOCAL, 1), rate=10, burst_every=10, burst_s=2, burst_factor=3)
    rates = {t: request_rate(t, settings) for t in (0, 1, 9.9, 10, 11.9, 12, 20.5, 22.5)}
    assert rates == {0: 10, 1: 10, 9.9: 10, 10: 30, 11.9: 30, 12: 10, 20.5: 30, 22.5: 10}
    assert request_rate(10.5, ClientSettings(Endpoint(LOCAL, 1), rate=10, burst_every=0)) == 10
