"""What every workload shares: a stop that ends a wait at its deadline, peer addresses parsed or refused, JSON lines
appended, and a fixed amount of compute."""

from __future__ import annotations

import json
import time

import pytest

from reveal.lab.workloads import Endpoint, JsonLines, MatmulWork, Stop

pytestmark = pytest.mark.timeout(30)


def test_stop_ends_a_wait_at_the_deadline():
    started = time.monotonic()
    assert Stop(duration_s=0.2).wait(5.0) is True
    assert time.monotonic() - started < 1.0


def test_a_peer_address_is_host_and_port_or_a_clear_error():
    assert Endpoint.parse(" 10.251.0.11:29500 ") == Endpoint("10.251.0.11", 29500)
    assert str(Endpoint("::1", 80)) == "::1:80" and Endpoint.parse("::1:80") == Endpoint("::1", 80)
    for text in ("10.251.0.11", ":29500", "h:0", "h:65536", "h:port"):
        with pytest.raises(ValueError, match="is not ADDR:PORT"):
            Endpoint.parse(text)


def test_json_lines_are_appended_one_object_a_line(tmp_path):
    path = tmp_path / "log.jsonl"
    for step in range(2):
        log = JsonLines(str(path))
        log.write({"step": step, "loss": 0.5})
        log.close()
    assert [json.loads(line) for line in path.read_text().splitlines()] == [{"step": 0, "loss": 0.5},
                                                                           {"step": 1, "loss": 0.5}]


def test_matmul_work_is_a_fixed_count_calibrated_to_a_target_time():
    assert MatmulWork.calibrated(32, 0.0).repeats == 0 and MatmulWork(8, 0).run() == 0.0
    work = MatmulWork.calibrated(32, 0.01)
    assert work.repeats >= 1 and work.run() == MatmulWork(32, work.repeats).run()
