"""What of a lab run works without root: where its telemetry goes, the work every training rank is given, progress
lines through long quiet stretches, SIGTERM turned into an interrupt so the hosts are torn down, and faults from the
start put in force before the workloads and lifted after the scheduled faults (on stand-in hosts and a clock that
moves only when slept)."""

import json
import math
import os
import signal
import time
from contextlib import contextmanager
from types import SimpleNamespace

import pytest

from reveal.lab import runner
from reveal.lab.faults import FaultEffect
from reveal.lab.hosts import LabError
from reveal.lab.runner import PipelineChoice, _interrupts_raise, _progress_every, run_scenario, train_work
from reveal.lab.scenario import parse_scenario
from reveal.lab.truth import read_truth

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


class SleptClock:
    """Time that passes only when slept, so a run of minutes takes none."""

    def __init__(self):
        self.now_ns = 1000 * 10**9

    def time_ns(self) -> int:
        return self.now_ns

    def time(self) -> float:
        return self.now_ns / 1e9

    def sleep(self, seconds: float) -> None:
        self.now_ns += math.ceil(max(seconds, 0.0) * 1e9)


class NotedFault:
    """A fault that only notes when it is started and stopped."""

    subsystem = "network"

    def __init__(self, spec, said: list[str]):
        self.spec, self.said = spec, said

    def describe(self) -> str:
        return f"{self.spec.kind} on {self.spec.host}"

    def start(self) -> None:
        self.said.append(f"start {self.spec.kind}")

    def stop(self) -> FaultEffect:
        self.said.append(f"stop {self.spec.kind}")
        return FaultEffect(True, {"value": 1400})


@contextmanager
def stand_in_network(tag, hosts, cpu_shares):
    yield SimpleNamespace(hosts={name: name for name in hosts}, subnet="10.251.9", agents=set())


ORDERED = {**SCENARIO, "fault": [
    {"kind": "packet_loss", "host": "h1", "start_s": 70, "duration_s": 20, "magnitude": 0.01},
    {"kind": "mtu", "host": "h2", "from_start": True, "magnitude": 1400}]}


@pytest.fixture
def said(monkeypatch) -> list[str]:
    """What a run with stand-in hosts, workloads, agents and faults did, in order."""
    said = []
    monkeypatch.setattr(runner, "time", SleptClock())
    monkeypatch.setattr(runner, "LabNetwork", stand_in_network)
    monkeypatch.setattr(runner, "_start_workloads", lambda *_: said.append("workloads"))
    monkeypatch.setattr(runner, "_start_agents", lambda *_: said.append("agents") or [])
    monkeypatch.setattr(runner, "make_fault", lambda spec, hosts, run_dir: NotedFault(spec, said))
    return said


def test_a_fault_from_the_start_holds_before_the_workloads_until_after_the_scheduled_ones(tmp_path, said):
    run_dir = run_scenario(parse_scenario(ORDERED), tmp_path / "run", progress=lambda line: None)
    assert said == ["start mtu", "workloads", "agents", "start packet_loss", "stop packet_loss", "stop mtu"]
    started_ns = json.loads((run_dir / "run.json").read_text())["started_ns"]
    scheduled, standing = read_truth(run_dir / "truth.jsonl")
    assert not scheduled.from_start and scheduled.start_ns >= started_ns + 70 * 10**9
    assert standing.from_start and standing.start_ns < started_ns and standing.end_ns >= started_ns + 120 * 10**9
    assert standing.effect == {"value": 1400} and standing.description == "mtu on h2"


def test_a_fault_from_the_start_is_lifted_when_the_run_fails_before_it_ends(tmp_path, said, monkeypatch):
    def fail(*_):
        raise LabError("no workloads")
    monkeypatch.setattr(runner, "_start_workloads", fail)
    with pytest.raises(LabError, match="no workloads"):
        run_scenario(parse_scenario(ORDERED), tmp_path / "run", progress=lambda line: None)
    assert said == ["start mtu", "stop mtu"]
