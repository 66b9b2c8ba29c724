"""Measures the agent on this host: channels, CPU per tick, jitter, and bytes per channel-sample on the wire and at
rest. Used by `reveal bench agent`; figures are printed, never asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field

import numpy as np

from producers.agent import Agent, AgentSettings
from producers.sampler import TickStats, block_end, run_schedule
from producers.publisher import KafkaFramePublisher
from schemas.agent_records import Catalog, Frame
from schemas.topics import TopicNames, ensure_topics

WARMUP_S = 10.0
WAKE_FLOOR_S = 20.0
# The Kafka client's statistics give the bytes on the wire; writing them costs the client's thread CPU each time,
# so they come seldom enough not to count in the agent's figure, and once more after the last frame was sent.
STATISTICS_EVERY_MS = 10_000
GOALS = {"cpu_percent_of_core": 0.5, "cpu_us_per_channel_sample": 1.0, "jitter_p99_ms": 5.0,
         "wire_bytes_per_channel_sample": 1.5, "rest_bytes_per_channel_sample": 1.0,
         "process_rss_mib": 50.0, "process_cpu_percent_of_core": 0.5}
MIB = 1 << 20


@dataclass
class AgentBenchResult:
    channels: int = 0
    frames: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    sampling_cpu_seconds: float = 0.0
    jitter_p50_ms: float = 0.0
    jitter_p99_ms: float = 0.0
    ticks_skipped: int = 0
    wire_bytes: float = float("nan")
    rest_bytes: float = float("nan")
    rest_values_bytes: float = float("nan")
    kernel_floor_cpu_seconds: float = 0.0
    kernel_floor_files: int = 0
    wake_floor_cpu_seconds: float = 0.0
    wake_floor_seconds: float = 1.0
    per_source_cpu_us: dict = field(default_factory=dict)
    process: "AgentProcessFigures | None" = None

    @property
    def channel_samples(self) -> int:
        return self.channels * self.frames

    def figures(self) -> dict[str, float]:
        return {"cpu_percent_of_core": 100 * self.cpu_seconds / self.seconds,
                "sampling_thread_percent_of_core": 100 * self.sampling_cpu_seconds / self.seconds,
                "cpu_us_per_channel_sample": 1e6 * self.cpu_seconds / max(self.channel_samples, 1),
                "jitter_p50_ms": self.jitter_p50_ms, "jitter_p99_ms": self.jitter_p99_ms,
                "wire_bytes_per_channel_sample": self.wire_bytes / max(self.channel_samples, 1),
                "rest_bytes_per_channel_sample": self.rest_bytes / max(self.channel_samples, 1),
                "rest_values_bytes_per_channel_sample": self.rest_values_bytes / max(self.channel_samples, 1),
                "kernel_floor_percent_of_core": 100 * self.kernel_floor_cpu_seconds / self.seconds,
                "kernel_floor_us_per_channel_sample":
                    1e6 * self.kernel_floor_cpu_seconds / max(self.channel_samples, 1),
                "wake_floor_percent_of_core": 100 * self.wake_floor_cpu_seconds / self.wake_floor_seconds,
                **(self.process.figures() if self.process else {})}


@dataclass(frozen=True)
class AgentProcessFigures:
    """`reveal agent` as a fleet runs it, measured from outside through /proc: its resident memory in steady state
    (median of one reading a second) and at its peak, and the CPU it used while measured."""

    rss_bytes: float
    peak_rss_bytes: float
    cpu_seconds: float
    seconds: float

    def figures(self) -> dict[str, float]:
        return {"process_rss_mib": self.rss_bytes / MIB, "process_peak_rss_mib": self.peak_rss_bytes / MIB,
                "process_cpu_percent_of_core": 100 * self.cpu_seconds / self.seconds}


class _KeepingPublisher(KafkaFramePublisher):
    """The real publisher, also keeping the frames it sent for the at-rest measurement."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.kept: list[Frame] = []
        self.catalog: Catalog | None = None

    def on_catalog(self, catalog: Catalog) -> None:
        self.catalog = catalog
        super().on_catalog(catalog)

    def on_frame(self, frame: Frame) -> None:
        self.kept.append(frame)
        super().on_frame(frame)


def bench_agent(bootstrap: str, interval_s: float, duration_s: float, progress=print,
                warmup_s: float = WARMUP_S) -> AgentBenchResult:
    """Sample this host for real, publishing to the broker, and measure what it costs; each measured part first
    runs `warmup_s` unmeasured."""
    names = TopicNames(f"bench-{uuid.uuid4().hex[:8]}.")
    ensure_topics({"bootstrap.servers": bootstrap}, names, sample_partitions=1)
    stats: list[str] = []  # the client's statistics as it hands them over; parsed after sampling, not during it
    settings = AgentSettings(interval_s=interval_s)
    publisher = _KeepingPublisher(bootstrap, topics=names, extra_config={
        "statistics.interval.ms": STATISTICS_EVERY_MS, "stats_cb": stats.append},
        frames_per_message=max(1, settings.ticks_per_block))
    agent = Agent(settings, publisher)
    progress(f"warming up for {warmup_s:g} s (files opened, layouts cached, heap grown), not measured …")
    warm_until = time.monotonic() + warmup_s
    agent.run(lambda: time.monotonic() >= warm_until)
    agent.stats = TickStats()
    progress(f"sampling {len(agent.registry.catalog.channels)} channels every {interval_s} s for {duration_s:g} s …")
    wall, cpu, thread_cpu = time.perf_counter(), time.process_time(), time.thread_time()
    deadline = time.monotonic() + duration_s
    run_stats = agent.run(lambda: time.monotonic() >= deadline)
    result = AgentBenchResult(len(agent.registry.catalog.channels), run_stats.ticks,
                              time.perf_counter() - wall, time.process_time() - cpu, time.thread_time() - thread_cpu)
    lags = np.array(run_stats.lags) * 1e3
    result.jitter_p50_ms, result.jitter_p99_ms = float(np.percentile(lags, 50)), float(np.percentile(lags, 99))
    result.ticks_skipped = run_stats.skipped
    result.per_source_cpu_us = {source: 1e6 * seconds / max(reads, 1)
                               for source, (reads, seconds) in agent.registry.read_costs().items()}
    progress(f"measuring the kernel's floor: the same files read bare on the same schedule for {duration_s:g} s …")
    result.kernel_floor_files, result.kernel_floor_cpu_seconds = kernel_floor(agent, duration_s)
    result.wake_floor_seconds = min(duration_s, WAKE_FLOOR_S)
    progress(f"measuring the wake-up floor: the same schedule with nothing to do for "
             f"{result.wake_floor_seconds:g} s …")
    result.wake_floor_cpu_seconds = wake_floor(agent.settings, result.wake_floor_seconds)
    agent.close()
    publisher.close()
    result.wire_bytes = result.frames * _wire_bytes_per_frame(publisher, stats)
    result.rest_bytes, result.rest_values_bytes = _bytes_at_rest(publisher.catalog, publisher.kept[1:])
    result.process = measure_agent_process(bootstrap, interval_s, duration_s, progress, warmup_s)
    return result


def _wire_bytes_per_frame(publisher: KafkaFramePublisher, stats: list[str]) -> float:
    """Bytes on the wire (requests to the brokers, after compression) per frame delivered (a message holds a block
    of them), from the client's first statistics written after everything was delivered."""
    sent_before = len(stats)
    deadline = time.monotonic() + 1.5 * STATISTICS_EVERY_MS / 1e3
    while len(stats) == sent_before and time.monotonic() < deadline:
        publisher.producer.poll(0.2)
    if not stats:
        return float("nan")
    client = json.loads(stats[-1])
    return sum(b["txbytes"] for b in client["brokers"].values()) / max(publisher.stats.delivered, 1)


def measure_agent_process(bootstrap: str, interval_s: float, duration_s: float, progress=print,
                          warmup_s: float = WARMUP_S) -> AgentProcessFigures:
    """Start `reveal agent` as its own process (publishing to the broker, no spool), let it warm up, then read its
    memory every second and its CPU over `duration_s`."""
    prefix = f"bench-{uuid.uuid4().hex[:8]}."
    command = [sys.executable, "-m", "reveal", "--log-level", "WARNING", "agent", "--bootstrap", bootstrap,
               "--topic-prefix", prefix, "--interval", f"{interval_s:g}", "--no-spool",
               "--duration", f"{warmup_s + duration_s + 5:g}"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        progress(f"reveal agent as its own process (pid {process.pid}): warming up {warmup_s:g} s, then measuring "
                 f"its memory and CPU for {duration_s:g} s …")
        time.sleep(warmup_s)
        cpu, started = _process_cpu_seconds(process.pid), time.monotonic()
        resident = []
        while time.monotonic() - started < duration_s and process.poll() is None:
            resident.append(_status_bytes(process.pid, "VmRSS"))
            time.sleep(1.0)
        if process.poll() is not None:
            raise RuntimeError(f"reveal agent stopped early: {process.stderr.read().strip()[-500:]}")
        figures = AgentProcessFigures(float(np.median(resident)), _status_bytes(process.pid, "VmHWM"),
                                      _process_cpu_seconds(process.pid) - cpu, time.monotonic() - started)
    finally:
        process.terminate()
        process.wait(timeout=30)
    return figures


def _status_bytes(pid: int, field_name: str) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field_name + ":"):
            return float(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/{pid}/status has no {field_name}")


def _process_cpu_seconds(pid: int) -> float:
    """User and system time of the process (all its threads), from /proc/PID/stat."""
    stat = open(f"/proc/{pid}/stat").read()
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def kernel_floor(agent: Agent, duration_s: float) -> tuple[int, float]:
    """CPU seconds that merely reading the agent's files costs on the agent's schedule: each file pread once per due
    tick, nothing parsed or sent, the schedule kept as the agent keeps it (in the compiled scanner, a block of ticks
    at a time, where the agent does so). It is what the kernel charges to generate /proc and /sys text, the part of
    the agent's figure that no parser can remove."""
    opened = [(os.open(path, os.O_RDONLY | os.O_CLOEXEC), source.every_ticks)
              for source in agent.registry.sources for path in source.collector.files()]
    try:
        fds = np.array([fd for fd, _ in opened], dtype=np.int32)
        everies = np.array([every for _, every in opened], dtype=np.int32)
        started = time.thread_time()
        _keep_schedule(agent.settings, duration_s, fds, everies)
        return len(opened), time.thread_time() - started
    finally:
        for fd, _ in opened:
            os.close(fd)


def wake_floor(settings: AgentSettings, duration_s: float) -> float:
    """CPU seconds that keeping the agent's schedule costs with nothing to do at each tick: waking the thread and
    running the schedule's loop, as the agent keeps it. The kernel floor includes it; on a VM each wake-up finds
    the caches cold."""
    started = time.thread_time()
    _keep_schedule(settings, duration_s, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32))
    return time.thread_time() - started


def _keep_schedule(settings: AgentSettings, duration_s: float, fds: np.ndarray, everies: np.ndarray) -> None:
    """The agent's schedule for duration_s, each of fds read bare at the ticks its entry in everies divides."""
    from producers.fast_read.scanned_layout import _tokenscan
    buffer = bytearray(1 << 16)
    deadline = time.monotonic() + duration_s
    block_ticks = settings.ticks_per_block
    if _tokenscan is not None and block_ticks > 1:
        start_ns, interval_ns, last_tick = time.monotonic_ns(), round(settings.interval_s * 1e9), -1
        while time.monotonic() < deadline:
            last_tick = _tokenscan.read_each_on_schedule(fds, everies, buffer, start_ns, interval_ns, last_tick,
                                                         block_end(last_tick, block_ticks))
        return
    read_each = _tokenscan.read_each if _tokenscan is not None else _read_each_in_python
    groups = {every: fds[everies == every] for every in set(everies.tolist())}

    def tick(index: int, due: float) -> None:
        for every, group in groups.items():
            if index % every == 0:
                read_each(group, buffer)

    run_schedule(settings.interval_s, tick, lambda: time.monotonic() >= deadline)


def _read_each_in_python(fds: np.ndarray, buffer: bytearray) -> int:
    return sum(os.preadv(int(fd), [buffer], 0) for fd in fds)


def _bytes_at_rest(catalog: Catalog, frames: list[Frame]) -> tuple[float, float]:
    """Compressed bytes of the frames in ClickHouse's frames table (all columns, and the values column alone)."""
    from sinks.clickhouse import ClickHouseWriter
    from sinks.rows import frame_row

    with tempfile.TemporaryDirectory() as directory:
        writer = ClickHouseWriter(f"chdb://{directory}", "bench")
        # wide parts account bytes per column; production parts are wide once they pass 10 MB anyway
        writer.command("ALTER TABLE bench.frames MODIFY SETTING min_bytes_for_wide_part = 0")
        writer.add("frames", [frame_row(f) for f in frames])
        writer.flush()
        writer.command("OPTIMIZE TABLE bench.frames FINAL")
        _, rows = writer.query("SELECT column, sum(column_data_compressed_bytes) FROM system.parts_columns "
                               "WHERE database = 'bench' AND table = 'frames' AND active GROUP BY column")
        writer.close()
    sizes = dict(rows)
    return float(sum(v for k, v in sizes.items() if k != "stored_at")), float(sizes.get("values", 0))
