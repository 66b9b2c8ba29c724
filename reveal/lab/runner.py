"""Runs one lab scenario for real: builds the hosts, starts the workloads and one agent per host, lets the agents
settle for the scenario's warm-up, injects the faults on schedule (t = 0 is the end of the warm-up), and writes the
telemetry and the ground truth into the run's directory. Faults from the start are put in force once the hosts are
up, before any workload starts, and lifted after the scheduled ones, when the run ends.

    RUN/scenario.toml      the scenario as run
    RUN/run.json           run id, hosts, times (started_ns is t = 0), seed, baseline, mode
    RUN/truth.jsonl        one FaultLabel per injected fault: the times it was really in force and what it did
    RUN/telemetry/H.avro   each host's frames and catalog, as its agent recorded them
    RUN/logs/              workload and agent output

Hosts, rules and processes are removed when the run ends, fails or is interrupted (SIGINT or SIGTERM).
"""

from __future__ import annotations

import json
import logging
import shutil
import signal
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from reveal.lab.fault_kinds import make_fault
from reveal.lab.faults import Fault, FaultEffect, FaultSpec
from sinks.clickhouse import data_dir_dsn
from reveal.lab.hosts import LabError, LabHost, LabNetwork, stop_all
from reveal.lab.scenario import Scenario
from reveal.lab.truth import FaultLabel, write_truth

log = logging.getLogger(__name__)

WORKLOAD_SETTLE_S = 8.0
TRAIN_PORT = 29500
INFER_PORT = 29600
AGENT_SOURCES = "network,cgroups"
CGROUP_INTERVAL_S = 0.2
WORKER_NICENESS = 10  # the worker yields the shared cores to the emulated hosts (see _start_worker)
WORKER_IDLE_S = 8.0  # the worker ends its run this long after the last frame, once none waits unread in Kafka
PROGRESS_EVERY_S = 300.0
TRAIN_COMPUTE_MS = 15.0
TRAIN_MATRIX_SIZE = 256
TRAIN_OPTIONS = ("--compute-ms", f"{TRAIN_COMPUTE_MS:g}", "--matrix-size", str(TRAIN_MATRIX_SIZE),
                 "--accelerator-ms", "600", "--gradient-mb", "2")
TRAIN_PHASES = ("--eval-every", "200", "--eval-steps", "20", "--checkpoint-every", "300", "--checkpoint-mb", "16")
INPUT_OPTIONS = ("--files", "64", "--file-mb", "2", "--batch-files", "2", "--compute-ms", "20")
INPUT_PHASES = ("--epoch-pause-s", "5")


@dataclass(frozen=True)
class PipelineChoice:
    """How a run's telemetry reaches the engine: through Kafka to a Faust worker (bootstrap set), or embedded
    (the agents record, and the lab replays the recordings through the same stages afterwards)."""

    bootstrap: str = ""

    @property
    def embedded(self) -> bool:
        return not self.bootstrap


def run_scenario(scenario: Scenario, run_dir: Path, pipeline: PipelineChoice = PipelineChoice(),
                 progress: Callable[[str], None] = print, cpu_shares: int = 1024) -> Path:
    """Run the scenario once and leave its telemetry and ground truth in run_dir (which must not exist yet).
    cpu_shares weighs the run's hosts and agents against other labs on the machine (1024: as a plain process)."""
    run_dir.mkdir(parents=True)
    (run_dir / "telemetry").mkdir()
    (run_dir / "logs").mkdir()
    if scenario.source and Path(scenario.source).is_file():
        shutil.copyfile(scenario.source, run_dir / "scenario.toml")
    run_id = f"{scenario.name}-{uuid.uuid4().hex[:6]}"
    tag = uuid.uuid4().hex[:5]
    labels: list[FaultLabel] = []
    with _interrupts_raise(), LabNetwork(tag, list(scenario.hosts), cpu_shares=cpu_shares) as network, \
            StandingFaults(scenario, network.hosts, run_dir, progress) as standing:
        _start_workloads(scenario, network.hosts, run_dir)
        progress(f"{scenario.name}: {len(scenario.hosts)} hosts up on {network.subnet}.0/24, workloads "
                 f"{', '.join(scenario.workloads)} settling for {WORKLOAD_SETTLE_S:g} s")
        worker = None if pipeline.embedded else _start_worker(scenario, pipeline.bootstrap, tag, run_dir, progress)
        if worker is not None:
            network.agents.add(worker.pid)
        time.sleep(WORKLOAD_SETTLE_S)
        agents = _start_agents(scenario, network.hosts, run_id, run_dir, pipeline.bootstrap, tag)
        for agent in agents:
            network.agents.add(agent.pid)
        progress(f"{scenario.name}: agents settling for {scenario.warmup_s:g} s (not part of any baseline)")
        time.sleep(scenario.warmup_s)
        started_ns = time.time_ns()
        try:
            labels = _inject_on_schedule(scenario, network.hosts, run_dir, started_ns, progress)
            labels += standing.lift()
        finally:
            stop_all(agents, grace_s=15.0)
            if worker is not None:
                _finish_worker(worker, progress)
    ended_ns = time.time_ns()
    write_truth(run_dir / "truth.jsonl", labels)
    (run_dir / "run.json").write_text(json.dumps({
        "run_id": run_id, "scenario": scenario.name, "hosts": list(scenario.hosts), "cluster": run_id,
        "workloads": list(scenario.workloads), "seed": scenario.seed, "baseline_s": scenario.baseline_s,
        "duration_s": scenario.duration_s, "warmup_s": scenario.warmup_s, "phases": scenario.phases,
        "heterogeneous": scenario.heterogeneous, "started_ns": started_ns, "ended_ns": ended_ns,
        "faults": len(labels), "pipeline": "embedded" if pipeline.embedded else "kafka"}, indent=2))
    progress(f"{scenario.name}: done, {len(labels)} faults injected; telemetry in {run_dir / 'telemetry'}")
    return run_dir


class StandingFaults:
    """The scenario's faults from the start: in force once the hosts are up, before any workload starts, so the
    baseline holds them too; lifted when the run ends (or fails), each labelled with the interval it really held."""

    def __init__(self, scenario: Scenario, hosts: dict[str, LabHost], run_dir: Path,
                 progress: Callable[[str], None]):
        self.scenario, self.hosts, self.run_dir, self.progress = scenario, hosts, run_dir, progress
        self._in_force: list[tuple[FaultSpec, Fault, int]] = []

    def __enter__(self) -> "StandingFaults":
        try:
            for spec in (spec for spec in self.scenario.faults if spec.from_start):
                fault = make_fault(spec, self.hosts, self.run_dir)
                fault.start()
                self._in_force.append((spec, fault, time.time_ns()))
                self.progress(f"{self.scenario.name}: from the start  {fault.describe()} is in force")
        except BaseException:
            self.__exit__()
            raise
        return self

    def lift(self) -> list[FaultLabel]:
        """Lift every fault, measuring what it did."""
        labels = []
        while self._in_force:
            spec, fault, began_ns = self._in_force.pop(0)
            effect = fault.stop()
            labels.append(fault_label(spec, fault, began_ns, effect))
            self.progress(f"{self.scenario.name}: at the end  {_ended_text(fault, effect)}")
        return labels

    def __exit__(self, *_) -> None:
        for _, fault, _ in self._in_force:
            fault.stop()
        self._in_force.clear()


def fault_label(spec: FaultSpec, fault: Fault, began_ns: int, effect: FaultEffect) -> FaultLabel:
    """The truth of a fault just lifted: the interval it held, from its start to now, and what it did."""
    return FaultLabel(spec.kind, spec.host, began_ns, time.time_ns(), fault.subsystem, spec.magnitude,
                      fault.describe(), effect.took_effect, effect.measured, effect.drops_timeline, spec.from_start,
                      spec.setting)


def _inject_on_schedule(scenario: Scenario, hosts: dict[str, LabHost], run_dir: Path, started_ns: int,
                        progress: Callable[[str], None]) -> list[FaultLabel]:
    """Start and stop each scheduled fault at its time; the labels carry the times the fault was really in force."""
    scheduled = [(index, spec) for index, spec in enumerate(scenario.faults) if not spec.from_start]
    events = sorted([(spec.start_s, 1, index) for index, spec in scheduled] +
                    [(spec.start_s + spec.duration_s, 0, index) for index, spec in scheduled])
    active: dict[int, tuple[Fault, int]] = {}
    labels = []
    try:
        for at_s, is_start, index in events:
            _sleep_until(started_ns, at_s, _progress_every(scenario, progress))
            spec = scenario.faults[index]
            if is_start:
                fault = make_fault(spec, hosts, run_dir)
                fault.start()
                active[index] = (fault, time.time_ns())
                progress(f"{scenario.name}: +{at_s:5.0f} s  {fault.describe()} begins")
            else:
                fault, began_ns = active.pop(index)
                effect = fault.stop()
                labels.append(fault_label(spec, fault, began_ns, effect))
                progress(f"{scenario.name}: +{at_s:5.0f} s  {_ended_text(fault, effect)}")
        _sleep_until(started_ns, scenario.duration_s, _progress_every(scenario, progress))
    finally:
        for fault, _ in active.values():
            fault.stop()
    return labels


def _ended_text(fault: Fault, effect: FaultEffect) -> str:
    return (f"{fault.describe()} ends; {'took effect' if effect.took_effect else 'DID NOT TAKE EFFECT'}: "
            f"{_measured_text(effect.measured)}")


def _measured_text(measured: dict) -> str:
    """Each measured value by name: numbers to four figures, settings as they were read."""
    return ", ".join(f"{name.replace('_', ' ')} {value:,.4g}" if isinstance(value, (int, float))
                     else f"{name.replace('_', ' ')} {value}" for name, value in measured.items())


def _sleep_until(started_ns: int, at_s: float, tick: Callable[[float], None] = lambda elapsed_s: None) -> None:
    """Sleep until at_s seconds into the run, calling tick(seconds into the run) every PROGRESS_EVERY_S."""
    while (delay := started_ns / 1e9 + at_s - time.time()) > 0:
        time.sleep(min(delay, PROGRESS_EVERY_S - (time.time() - started_ns / 1e9) % PROGRESS_EVERY_S))
        elapsed_s = time.time() - started_ns / 1e9
        if elapsed_s < at_s - 1:
            tick(elapsed_s)


def _progress_every(scenario: Scenario, progress: Callable[[str], None]) -> Callable[[float], None]:
    """A progress line for long quiet stretches: how far the run is, and whether the baseline is still learned."""
    def tick(elapsed_s: float) -> None:
        phase = "baseline" if elapsed_s < scenario.baseline_s else "judged"
        progress(f"{scenario.name}: +{elapsed_s:5.0f} s of {scenario.duration_s:g} s ({phase})")
    return tick


def _start_agents(scenario: Scenario, hosts: dict[str, LabHost], run_id: str, run_dir: Path, bootstrap: str,
                  tag: str) -> list[subprocess.Popen]:
    """One agent per host, outside the hosts' cgroups, reading each host's namespace and cgroup; it publishes to
    Kafka and records (or only records, embedded)."""
    agents = []
    for host in hosts.values():
        recording = str(run_dir / "telemetry" / f"{host.name}.avro")
        output = ["agent", "--bootstrap", bootstrap, "--topic-prefix", _topic_prefix(tag), "--no-spool",
                  "--record", recording] if bootstrap else ["collect", "--out", recording]
        argv = [sys.executable, "-m", "reveal.cli", *output, "--host", host.name, "--cluster", run_id,
                "--sources", AGENT_SOURCES, "--net-procfs", host.net_procfs,
                "--cgroup-parent", host.cgroup.parent, "--source-interval", f"cgroups={CGROUP_INTERVAL_S}",
                "--settle", f"{scenario.warmup_s:g}", "--duration", f"{scenario.warmup_s + scenario.duration_s + 2:g}"]
        with open(run_dir / "logs" / f"agent-{host.name}.log", "ab") as log_file:
            agents.append(subprocess.Popen(argv, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True))
    return agents


def _start_worker(scenario: Scenario, bootstrap: str, tag: str, run_dir: Path,
                  progress: Callable[[str], None]) -> subprocess.Popen:
    """A Faust worker of its own consumer group and topics, storing into the run's ClickHouse. A fleet's workers run
    on machines of their own; here they share the emulated hosts' cores, so the worker yields to them (nice 10): its
    bursts, such as every host's baseline fitted in the same second, must not starve the hosts' jobs into timeouts
    and retransmissions that no fault caused."""
    from reveal.lab.ingest import LIVE_MODE, engine_settings_for

    settings = engine_settings_for(scenario.baseline_s, LIVE_MODE, scenario.seed)
    argv = ["nice", "-n", str(WORKER_NICENESS), sys.executable, "-m", "reveal.cli", "worker", "--bootstrap",
            bootstrap, "--topic-prefix", _topic_prefix(tag), "--group", f"reveal-lab-{tag}", "--clickhouse",
            data_dir_dsn(run_dir),
            "--until-idle", f"{WORKER_IDLE_S:g}", "--warmup", f"{settings.warmup_s:g}",
            "--seed", str(scenario.seed)]
    progress(f"{scenario.name}: Faust worker on {bootstrap}, topics {_topic_prefix(tag)}*")
    with open(run_dir / "logs" / "worker.log", "ab") as log_file:
        return subprocess.Popen(argv, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True)


def _finish_worker(worker: subprocess.Popen, progress: Callable[[str], None]) -> None:
    """Let the worker drain the last frames and stop on its own once idle; stop it if it does not."""
    progress("waiting for the worker to drain the last windows …")
    try:
        worker.wait(WORKER_IDLE_S + 90)
    except subprocess.TimeoutExpired:
        stop_all([worker], grace_s=30.0)
    if worker.returncode not in (0, None):
        raise LabError(f"the worker exited with status {worker.returncode}; see logs/worker.log")


def _topic_prefix(tag: str) -> str:
    return f"lab-{tag}."


def train_work(scenario: Scenario) -> tuple[str, ...]:
    """Every rank's work per step: one matmul count calibrated here, so the ranks are alike, unless the scenario
    makes them heterogeneous on purpose (each rank then calibrates its own)."""
    from threadpoolctl import threadpool_limits

    from reveal.lab.workloads.common import MatmulWork

    if scenario.heterogeneous:
        return ()
    with threadpool_limits(1):
        repeats = MatmulWork.calibrated(TRAIN_MATRIX_SIZE, TRAIN_COMPUTE_MS / 1e3).repeats
    return ("--matmuls", str(max(1, repeats)))


def _start_workloads(scenario: Scenario, hosts: dict[str, LabHost], run_dir: Path) -> None:
    """Each workload on every host, for the whole run (the lab stops them when it tears the hosts down)."""
    module = [sys.executable, "-m", "reveal.lab.workloads"]
    seconds = f"{scenario.warmup_s + scenario.duration_s + WORKLOAD_SETTLE_S + 30:g}"
    members = list(hosts.values())
    peers = ",".join(f"{h.address}:{TRAIN_PORT}" for h in members)
    work = train_work(scenario)
    for rank, host in enumerate(members):
        logs = run_dir / "logs"
        if "train" in scenario.workloads and len(members) > 1:
            phases = (*TRAIN_PHASES, "--checkpoint-dir", str(run_dir / "data" / host.name / "checkpoints")) \
                if scenario.phases else ()
            host.spawn([*module, "train", "--rank", str(rank), "--peers", peers, *TRAIN_OPTIONS, *work, *phases,
                        "--duration", seconds, "--log", str(logs / f"train-{host.name}.jsonl")],
                       logs / f"train-{host.name}.out")
        if "infer" in scenario.workloads and len(members) > 1:
            server = members[0]
            if host is server:
                host.spawn([*module, "infer", "serve", "--listen", f"{host.address}:{INFER_PORT}", "--duration",
                            seconds], logs / f"infer-serve-{host.name}.out")
            else:
                host.spawn([*module, "infer", "client", "--server", f"{server.address}:{INFER_PORT}", "--duration",
                            seconds, "--log", str(logs / f"infer-{host.name}.jsonl")], logs / f"infer-{host.name}.out")
        if "input" in scenario.workloads:
            data = run_dir / "data" / host.name
            data.mkdir(parents=True, exist_ok=True)
            phases = (*INPUT_PHASES, "--seed", str(scenario.seed + rank)) if scenario.phases else ()
            host.spawn([*module, "input", "--data-dir", str(data), *INPUT_OPTIONS, *phases, "--duration", seconds,
                        "--log", str(logs / f"input-{host.name}.jsonl")], logs / f"input-{host.name}.out")


@contextmanager
def _interrupts_raise():
    """SIGTERM interrupts the run like Ctrl-C, so the hosts are torn down either way."""
    def interrupt(*_):
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
