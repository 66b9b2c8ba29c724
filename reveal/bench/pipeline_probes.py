"""What the pipeline benchmark watches while it runs: the worker processes (CPU, memory), the consumer group's lag
on the broker, and the anomalies and alerts the workers publish, each with the time it arrived (wall clock)."""

from __future__ import annotations

import abc
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

import psutil
from confluent_kafka import (Consumer, ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaException,
                             TopicPartition)
from confluent_kafka.admin import AdminClient, OffsetSpec

from schemas.codec import DecodeError
from schemas.records import decode_alert, decode_anomaly
from schemas.topics import TopicNames


EMBEDDED_CLICKHOUSE_GAUGE = "reveal_worker_embedded_clickhouse_memory_bytes"


@dataclass(frozen=True)
class ProcessSample:
    """One worker process at one instant: CPU seconds so far (its children included), resident memory, and of that
    what its embedded ClickHouse tracks for itself (0 when unknown)."""

    at: float
    cpu_s: float
    rss_bytes: int
    embedded_storage_bytes: int = 0

    @property
    def own_bytes(self) -> int:
        """Resident memory without the embedded ClickHouse's: what the worker holds where it writes to a server."""
        return max(self.rss_bytes - self.embedded_storage_bytes, 0)


def sample_process(process: psutil.Process, embedded_storage_bytes: int = 0) -> ProcessSample:
    times = process.cpu_times()
    cpu = times.user + times.system + times.children_user + times.children_system
    return ProcessSample(time.time(), cpu, process.memory_info().rss, embedded_storage_bytes)


def scraped_gauge(url: str, name: str, timeout_s: float = 1.0) -> float | None:
    """The value of an unlabelled-or-labelled gauge on a Prometheus text page (the first series of it); None when the
    page cannot be read or has no such series."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            page = response.read().decode("utf-8", "replace")
    except OSError:
        return None
    for line in page.splitlines():
        if line.startswith(name) and line[len(name):len(name) + 1] in ("{", " "):
            return float(line.rsplit(" ", 1)[1])
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class WorkerProcess:
    """One `reveal worker` subprocess of the benchmark, with its own chDB folder, log and home."""

    def __init__(self, bootstrap: str, prefix: str, group: str, folder: Path, warmup_s: float):
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.dsn = f"chdb://{folder / 'clickhouse'}"
        self.log_path = folder / "worker.log"
        port = free_port()
        self.metrics_url = f"http://127.0.0.1:{port}/metrics"
        command = [sys.executable, "-m", "reveal.cli", "--log-level", "INFO", "worker", "--bootstrap", bootstrap,
                   "--topic-prefix", prefix, "--group", group, "--clickhouse", self.dsn,
                   "--warmup", f"{warmup_s:g}", "--metrics-listen", f"127.0.0.1:{port}"]
        # its own HOME keeps the worker's Faust state folder inside the benchmark's temporary folder
        environment = {**os.environ, "HOME": str(folder), "PYTHONUNBUFFERED": "1"}
        with open(self.log_path, "wb") as log:
            self.popen = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment,
                                          cwd=os.getcwd())
        self.process = psutil.Process(self.popen.pid)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def sample(self) -> ProcessSample:
        """CPU and memory now, with the embedded ClickHouse's share of the memory from the worker's /metrics."""
        embedded = scraped_gauge(self.metrics_url, EMBEDDED_CLICKHOUSE_GAUGE)
        return sample_process(self.process, int(embedded or 0))

    def stop(self, timeout_s: float = 60.0) -> int:
        """Stop it as an operator would (SIGTERM: incidents closed, rows written); kill it if it hangs."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        try:
            return self.popen.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            return self.popen.wait()

    def log_tail(self, characters: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-characters:]


def snapshot(workers: list[WorkerProcess]) -> list[ProcessSample]:
    """One sample of every worker, now."""
    return [worker.sample() for worker in workers]


class PeriodicProbe(abc.ABC):
    """Calls `sample` every `every_s` seconds on a daemon thread until stopped."""

    def __init__(self, name: str, every_s: float):
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    @abc.abstractmethod
    def sample(self) -> None:
        """Take one sample; runs on the probe's thread."""

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.sample()


class MemoryProbe(PeriodicProbe):
    """The workers' resident memory together, every second, and of it what their embedded ClickHouse tracks: one
    sample swings by ±150 MB with chDB's merges and the allocator, so the benchmark reads medians and the peak."""

    def __init__(self, workers: list[WorkerProcess], every_s: float = 1.0):
        super().__init__("memory-probe", every_s)
        self.workers = workers
        self.samples: list[tuple[float, int, int]] = []  # (wall time, resident bytes, embedded ClickHouse's bytes)

    def sample(self) -> None:
        try:
            samples = snapshot(self.workers)
            self.samples.append((time.time(), sum(sample.rss_bytes for sample in samples),
                                 sum(sample.embedded_storage_bytes for sample in samples)))
        except psutil.Error:
            self._stop.set()  # a worker exited; what was sampled stands


class LagProbe(PeriodicProbe):
    """The consumer group's committed offsets on the samples topic against its high watermarks, from the broker."""

    def __init__(self, bootstrap: str, group: str, topic: str, every_s: float = 2.0):
        super().__init__("lag-probe", every_s)
        self.admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        self.group, self.topic = group, topic
        self.samples: list[tuple[float, int, int]] = []  # (wall time, records consumed, records behind)

    def sample(self) -> None:
        try:
            committed, ends = self.committed(), self.high_watermarks()
        except KafkaException:
            return  # one missed sample; the broker is busy, the next one will do
        consumed = sum(max(committed.get(p, 0), 0) for p in ends)
        self.samples.append((time.time(), consumed, sum(ends.values()) - consumed))

    def high_watermarks(self) -> dict[int, int]:
        partitions = self.admin.list_topics(self.topic, timeout=10).topics[self.topic].partitions
        futures = self.admin.list_offsets({TopicPartition(self.topic, p): OffsetSpec.latest() for p in partitions},
                                          request_timeout=10)
        return {tp.partition: future.result().offset for tp, future in futures.items()}

    def committed(self) -> dict[int, int]:
        futures = self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(self.group)],
                                                         request_timeout=10)
        result = futures[self.group].result()
        return {tp.partition: tp.offset for tp in result.topic_partitions if tp.topic == self.topic}

    def wait_until_stable(self, members: int, timeout_s: float = 90.0) -> bool:
        """Whether the group reached a stable state with `members` consumers holding partitions in time."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            future = self.admin.describe_consumer_groups([self.group], request_timeout=10)[self.group]
            try:
                group = future.result()
            except Exception:  # the group does not exist until its first member joins
                group = None
            if group is not None and group.state == ConsumerGroupState.STABLE and \
                    sum(1 for m in group.members if m.assignment.topic_partitions) >= members:
                return True
            time.sleep(1.0)
        return False


@dataclass(frozen=True)
class Finding:
    """An anomaly or an opened alert as it arrived: its kind, the window it is about, when it was received (wall
    clock). Kinds: 'anomaly' and 'alert' from a host's own detectors, 'peer-anomaly' and 'peer-alert' from the
    cluster stage (which waits for stragglers before it compares a window)."""

    kind: str
    host: str
    window_end_ns: int
    received_ns: int


CLUSTER_DETECTORS = frozenset({"peer", "retransmissions"})


def finding_of(topic_kind: str, value: bytes, received_ns: int) -> Finding | None:
    """The finding in an anomaly or alert message; None for an alert that is not an opening, or bytes that are not
    a record."""
    try:
        if topic_kind == "anomaly":
            anomaly = decode_anomaly(value)
            origin = "peer-" if CLUSTER_DETECTORS & set(anomaly.detectors) else ""
            return Finding(f"{origin}anomaly", anomaly.host, anomaly.window_end_ns, received_ns)
        alert = decode_alert(value)
    except (DecodeError, ValueError, TypeError, KeyError):
        return None
    if alert.state != "open":
        return None
    origin = "peer-" if alert.kind in CLUSTER_DETECTORS else ""
    return Finding(f"{origin}alert", alert.host, alert.end_ns, received_ns)


class FindingsListener:
    """Reads the anomalies and alerts topics from their beginning on a thread, noting when each record arrives."""

    def __init__(self, bootstrap: str, topics: TopicNames):
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:8]}",
                                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                  "fetch.wait.max.ms": 10, "log_level": 0})
        self.consumer.subscribe([topics.anomalies, topics.alerts])
        self.kinds = {topics.anomalies: "anomaly", topics.alerts: "alert"}
        self.findings: list[Finding] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="findings-listener", daemon=True)

    def start(self) -> "FindingsListener":
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.consumer.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            message = self.consumer.poll(0.2)
            if message is None or message.error():
                continue
            finding = finding_of(self.kinds[message.topic()], message.value(), time.time_ns())
            if finding is not None:
                self.findings.append(finding)
