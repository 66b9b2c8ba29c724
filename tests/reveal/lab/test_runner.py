"""What of a lab run works without root: where its telemetry goes, the work every training rank is given, progress
lines through long quiet stretches, and SIGTERM turned into an interrupt so the hosts are torn down."""

import os
import signal
import time

import pytest

from reveal.lab.runner import PipelineChoice, _interrupts_raise, _progress_every, train_work
from reveal.lab.scenario import parse_scenario

SCENARIO = {"name": "s", "hosts": ["h1", "h2"], "workloads": ["train"], "duration_s": 120, "baseline_s": 60}


def test_telemetry_goes_through_kafka_only_when_a_broker_is_named():
    assert PipelineChoice().embedded and not PipelineChoice("127.0.0.1:9092").embedded


def test_alike_ranks_get_one_calibrated_matmul_count_and_heterogeneous_ones_calibrate_their_own():
    flag, count = train_work(parse_scenario(SCENARIO))
    assert flag == "--matmuls" and int(count) >= 1
    assert train_work(parse_scenario({**SCENARIO, "heterogeneous": True})) == ()


def test_progress_says_how_far_the_run_is_and_whether_it_still_learns():
    said = []
    tick = _progress_every(parse_scenario(SCENARIO), said.append)
    tick(30.0)
    tick(90.0)
    assert said == ["s: +   30 s of 120 s (baseline)", "s: +   90 s of 120 s (judged)"]


def test_sigterm_interrupts_the_run_and_the_previous_handler_comes_back():
    previous = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt):
        with _interrupts_raise():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
    assert signal.getsignal(signal.SIGTERM) is previous
