"""Measures the whole distributed pipeline on this machine: N synthetic hosts replayed in real time through the real
broker into real Faust workers that store in chDB. Used by `reveal bench pipeline`; figures are printed, never
asserted.

Figures: sustained channel-samples per second stored, anomaly and alert latency after their window closed, the
consumer group's lag and whether it grows, worker CPU and memory per tracked host, and bytes per channel-sample on
Kafka and in ClickHouse.
"""

from __future__ import annotations

import json
import multiprocessing
import queue
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import psutil

from reveal.bench.paced_replay import FleetSettings, ReplayReport, replay_fleet
from schemas.topics import TopicNames, ensure_topics
from stream_jobs.engine.host_pipeline import EngineSettings
from reveal.bench.stack_profile import ProfileSummary, start_py_spy, summarise_collapsed
from reveal.bench.pipeline_probes import (FindingsListener, LagProbe, MemoryProbe, ProcessSample, WorkerProcess,
                                         snapshot)

WARMUP_WINDOWS = 10
GOALS = {"channel_samples_per_s": (">=", 1_000_000.0), "anomaly_latency_p99_s": ("<=", 1.5),
         "alert_latency_p99_s": ("<=", 1.5), "anomaly_latency_steady_part_p99_s": ("<=", 1.5),
         "alert_latency_steady_part_p99_s": ("<=", 1.5), "memory_mb_per_host": ("<=", 2.0)}
STEADY_FROM = 0.25  # share of the run before the steady part starts (start-up and first catch-up left out)
CAUGHT_UP_S = 2.0  # storage this close behind publication: the workers have caught up (a flush a second, a linger)
LAG_TREND_FROM = 0.5  # share of the run before lag growth is judged
DRAIN_S = 10.0
# The run's busiest topics keep only their last quarter hour, in small segments, so that an hour at 100 hosts does
# not fill the broker's disk (~9 MB/s of frames and host-window summaries).
BENCH_TOPIC_LIMITS = {"retention.ms": str(15 * 60 * 1000), "segment.bytes": str(64 << 20)}


@dataclass(frozen=True)
class PipelineBenchSettings:
    hosts: int
    channels: int = 700
    interval_s: float = 0.1
    duration_s: float = 60.0
    workers: int = 1
    bootstrap: str = "127.0.0.1:9092"
    seed: int = 0
    profile_path: str = ""

    @property
    def offered_frames_per_s(self) -> float:
        return self.hosts / self.interval_s

    def fleet(self) -> FleetSettings:
        """The replayed fleet: a step change on one host in ten, late enough for every baseline to be learnt."""
        step_at = max(0.7 * self.duration_s, WARMUP_WINDOWS + 8.0)
        return FleetSettings(self.hosts, self.channels, self.interval_s, self.duration_s, step_at,
                             max(1, self.hosts // 10), self.seed)


@dataclass
class PipelineBenchResult:
    settings: PipelineBenchSettings
    frames_stored: int = 0
    stored_frames_per_s: float = 0.0
    committed_frames_per_s: float = 0.0
    anomaly_latencies_s: list[float] = field(default_factory=list)
    alert_latencies_s: list[float] = field(default_factory=list)
    peer_latencies_s: list[float] = field(default_factory=list)
    steady_anomaly_latencies_s: list[float] = field(default_factory=list)  # windows closed in the steady part
    steady_alert_latencies_s: list[float] = field(default_factory=list)
    catch_up_s: float = float("nan")  # from the last baseline learned to storage caught up with publication
    lag_start: int = 0
    lag_end: int = 0
    lag_slope_per_s: float = 0.0
    delay_start_s: float = float("nan")
    delay_end_s: float = float("nan")
    delay_slope: float = 0.0
    falls_behind: bool = False
    worker_cpu_percent: float = 0.0
    producer_cpu_percent: float = 0.0
    idle_rss_bytes: int = 0
    steady_rss_bytes: int = 0  # medians of the first and last fifth of the steady part
    end_rss_bytes: int = 0
    median_rss_bytes: int = 0  # over the steady part
    rss_floor_growth_percent: float = float("nan")  # growth of the floor, what transient peaks do not explain
    peak_rss_bytes: int = 0
    kafka_bytes: float = float("nan")
    clickhouse_bytes: float = float("nan")
    replay: ReplayReport = field(default_factory=ReplayReport)
    profile: ProfileSummary | None = None
    worker_exit_codes: list[int] = field(default_factory=list)

    @property
    def channel_samples(self) -> int:
        return self.settings.channels * self.replay.frames

    def figures(self) -> dict[str, float]:
        channels = self.settings.channels
        anomaly_p50, anomaly_p99 = percentiles(self.anomaly_latencies_s)
        alert_p50, alert_p99 = percentiles(self.alert_latencies_s)
        peer_p50, peer_p99 = percentiles(self.peer_latencies_s)
        (steady_anomaly_p99,), (steady_alert_p99,) = (percentiles(self.steady_anomaly_latencies_s, (99,)),
                                                      percentiles(self.steady_alert_latencies_s, (99,)))
        return {"channel_samples_per_s": channels * self.stored_frames_per_s,
                "offered_channel_samples_per_s": channels * self.settings.offered_frames_per_s,
                "committed_channel_samples_per_s": channels * self.committed_frames_per_s,
                "anomaly_latency_p50_s": anomaly_p50, "anomaly_latency_p99_s": anomaly_p99,
                "alert_latency_p50_s": alert_p50, "alert_latency_p99_s": alert_p99,
                "anomaly_latency_steady_part_p99_s": steady_anomaly_p99,
                "alert_latency_steady_part_p99_s": steady_alert_p99,
                "peer_anomaly_latency_p50_s": peer_p50, "peer_anomaly_latency_p99_s": peer_p99,
                "start_up_catch_up_s": self.catch_up_s,
                "storage_delay_start_s": self.delay_start_s, "storage_delay_end_s": self.delay_end_s,
                "storage_delay_growth_s_per_s": self.delay_slope,
                "commit_lag_start_records": float(self.lag_start), "commit_lag_end_records": float(self.lag_end),
                "commit_lag_slope_records_per_s": self.lag_slope_per_s,
                "worker_cpu_percent_of_core": self.worker_cpu_percent,
                "producer_cpu_percent_of_core": self.producer_cpu_percent,
                "worker_rss_idle_mb": self.idle_rss_bytes / 2**20,
                "worker_rss_median_mb": self.median_rss_bytes / 2**20,
                "worker_rss_peak_mb": self.peak_rss_bytes / 2**20,
                "worker_rss_growth_percent_over_steady_part": rss_growth_percent(self.steady_rss_bytes,
                                                                                 self.end_rss_bytes),
                "worker_rss_floor_growth_percent_over_steady_part": self.rss_floor_growth_percent,
                "memory_mb_per_host": memory_per_host(self.idle_rss_bytes, self.median_rss_bytes,
                                                      self.settings.hosts) / 2**20,
                "memory_mb_per_host_at_peak": memory_per_host(self.idle_rss_bytes, self.peak_rss_bytes,
                                                              self.settings.hosts) / 2**20,
                "kafka_bytes_per_channel_sample": self.kafka_bytes / max(self.channel_samples, 1),
                "clickhouse_bytes_per_channel_sample": self.clickhouse_bytes / max(channels * self.frames_stored, 1)}


def rss_summary(samples: list[int]) -> tuple[int, int, int, int]:
    """(median of the first fifth, median of the last fifth, median, peak) of memory samples in time order; zeros
    for none.

    >>> rss_summary([10, 12, 11, 30, 12, 13, 14, 13, 15, 14])
    (11, 14, 13, 30)
    """
    if not samples:
        return 0, 0, 0, 0
    fifth = max(1, len(samples) // 5)
    return (int(np.median(samples[:fifth])), int(np.median(samples[-fifth:])), int(np.median(samples)),
            max(samples))


def rss_floor_growth_percent(samples: list[int]) -> float:
    """How much the floor of memory (the 5th percentile of the steady part's first and of its last fifth) grew:
    ClickHouse merges make peaks that grow with the parts they merge, and a leak raises the floor as well.

    >>> rss_floor_growth_percent([100, 100, 150, 180, 160, 200, 140, 130, 102, 102])
    2.0
    """
    if len(samples) < 2:
        return float("nan")
    fifth = max(1, len(samples) // 5)
    first, last = np.percentile(samples[:fifth], 5), np.percentile(samples[-fifth:], 5)
    return float(100.0 * (last - first) / first) if first else float("nan")


def rss_growth_percent(steady_bytes: int, end_bytes: int) -> float:
    """How much the workers' resident memory grew from the start of the steady part to its end (the soak's measure).

    >>> rss_growth_percent(100, 103)
    3.0
    """
    return 100.0 * (end_bytes - steady_bytes) / steady_bytes if steady_bytes else float("nan")


def percentiles(values: list[float], quantiles: tuple[float, ...] = (50, 99)) -> tuple[float, ...]:
    """The given percentiles of `values`, NaN for each when there are none.

    >>> percentiles([1.0, 2.0, 3.0], (50,))
    (2.0,)
    """
    if not values:
        return tuple(float("nan") for _ in quantiles)
    return tuple(float(np.percentile(values, q)) for q in quantiles)


def latencies_s(window_ends_ns: list[int], received_ns: list[int], clock_offset_ns: int) -> list[float]:
    """Seconds from each window's close to the arrival of what was said about it. A window closes on the wall clock
    when the frame at its end is published: its end plus the replay's offset from frame time to wall time."""
    return [(received - end - clock_offset_ns) / 1e9 for end, received in zip(window_ends_ns, received_ns)]


def lag_slope(samples: list[tuple[float, int]]) -> float:
    """Records per second by which the lag grows, by least squares over (time, lag) samples; 0 with fewer than 2."""
    if len(samples) < 2:
        return 0.0
    times, lags = np.array(samples, dtype=np.float64).T
    if np.ptp(times) == 0:
        return 0.0
    return float(np.polyfit(times - times[0], lags, 1)[0])


def falls_behind(growth_s_per_s: float, end_delay_s: float) -> bool:
    """The workers fall behind: storage trails publication by more than three seconds at the end (a flush a second
    and one window in flight are normal) and that delay is not shrinking by at least 2 % of the elapsed time."""
    return end_delay_s > 3.0 and growth_s_per_s > -0.02


def storage_delays(stored_by_second: dict[int, int], started_s: float, frames_per_s: float,
                   frames_sent: int) -> list[tuple[float, float]]:
    """(wall second, seconds behind) at the end of each second from the first to the last in which frames were
    stored: the frames published by then (on schedule from `started_s`) minus those stored by then, in seconds of
    publication. Counting every worker's frames, a worker that stores nothing for a while still counts as behind."""
    if not stored_by_second:
        return []
    delays, stored = [], 0
    for second in range(min(stored_by_second), max(stored_by_second) + 1):
        stored += stored_by_second.get(second, 0)
        sent = min(frames_sent, max(0.0, (second + 1.0 - started_s) * frames_per_s))
        delays.append((second + 1.0, max(0.0, sent - stored) / frames_per_s))
    return delays


def baselines_learned_s() -> float:
    """Seconds into the replay at which every host has learned its baseline: its warm-up windows have closed."""
    engine = EngineSettings()
    return engine.window_s + WARMUP_WINDOWS * engine.stride_s


def caught_up_at(delays: list[tuple[float, float]], after_s: float, within_s: float = CAUGHT_UP_S) -> float:
    """The first second at or after `after_s` at which storage trails publication by at most `within_s` (NaN if it
    never does): when the workers have worked off the start-up, in which every host learns its baseline at once.

    >>> caught_up_at([(10.0, 0.5), (11.0, 4.0), (12.0, 3.0), (13.0, 1.5), (14.0, 0.8)], after_s=11.0)
    13.0
    """
    return next((at for at, delay in delays if at >= after_s and delay <= within_s), float("nan"))


def memory_per_host(idle_rss_bytes: int, end_rss_bytes: int, hosts: int) -> float:
    """Bytes of worker memory per tracked host: growth over an idle worker, shared by the hosts."""
    return max(end_rss_bytes - idle_rss_bytes, 0) / max(hosts, 1)


def steady_rate(per_second: dict[int, int], start_s: float, end_s: float) -> float:
    """Mean per-second count over the whole seconds from `start_s` to `end_s` (epoch seconds)."""
    first, last = int(np.ceil(start_s)), int(np.floor(end_s))
    if last <= first:
        return 0.0
    return sum(count for second, count in per_second.items() if first <= second < last) / (last - first)


def cpu_percent(first: list[ProcessSample], last: list[ProcessSample]) -> float:
    """CPU of a group of processes between two samples of each, as % of one core."""
    wall = max(b.at - a.at for a, b in zip(first, last))
    return 100 * sum(b.cpu_s - a.cpu_s for a, b in zip(first, last)) / wall if wall > 0 else 0.0


def committed_rate(samples: list[tuple[float, int, int]], start: float, end: float) -> float:
    """Records per second the group committed between two wall-clock times, from the lag probe's samples."""
    inside = [(at, consumed) for at, consumed, _ in samples if start <= at <= end]
    if len(inside) < 2 or inside[-1][0] == inside[0][0]:
        return 0.0
    return (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])


class PipelineBench:
    """One run: topics, workers, replay, probes, then the figures from the broker, the processes and chDB.
    Times are wall-clock seconds, so that the broker's, the processes' and chDB's figures line up."""

    def __init__(self, settings: PipelineBenchSettings, folder: Path, progress=print):
        self.settings, self.folder, self.progress = settings, folder, progress
        self.prefix = f"bench-{uuid.uuid4().hex[:8]}."
        self.topics = TopicNames(self.prefix)
        self.group = f"{self.prefix}worker"
        self.result = PipelineBenchResult(settings)
        self.workers: list[WorkerProcess] = []
        self.lag = LagProbe(settings.bootstrap, self.group, self.topics.samples)
        self.steady = (0.0, 0.0)
        self.caught_up_at = float("nan")  # wall second when storage caught up after the baselines were learned
        self.listener: FindingsListener | None = None

    def run(self) -> PipelineBenchResult:
        ensure_topics({"bootstrap.servers": self.settings.bootstrap}, self.topics)
        self._limit_topic_sizes()
        context = multiprocessing.get_context("spawn")
        ready, go, results = context.Event(), context.Event(), context.Queue()
        start_ns = time.time_ns() // 10**9 * 10**9
        producer = context.Process(target=replay_fleet, name="bench-replay", daemon=True,
                                   args=(self.settings.bootstrap, self.prefix, self.settings.fleet(), start_ns,
                                         ready, go, results))
        producer.start()
        try:
            self._start_workers()
            self.progress("encoding the replayed frames …")
            if not ready.wait(600):
                raise RuntimeError("the replay did not finish encoding its frames within 600 s")
            self._measure(producer, go, results)
            self._summarise()
        finally:
            self.lag.stop()
            if self.listener is not None:
                self.listener.stop()
            exit_codes = [worker.stop() for worker in self.workers]
            producer.join(10)
            if producer.is_alive():
                producer.kill()
        self.result.worker_exit_codes = exit_codes
        self._read_storage()
        self._judge_latencies(start_ns)
        return self.result

    def _limit_topic_sizes(self) -> None:
        from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

        admin = AdminClient({"bootstrap.servers": self.settings.bootstrap, "log_level": 0})
        resources = [ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
            ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
            for name, value in BENCH_TOPIC_LIMITS.items()]) for topic in (self.topics.samples, self.topics.host_windows)]
        for future in admin.incremental_alter_configs(resources).values():
            future.result(30)

    def _start_workers(self) -> None:
        self.progress(f"starting {self.settings.workers} worker(s) in group {self.group} …")
        self.workers = [WorkerProcess(self.settings.bootstrap, self.prefix, self.group, self.folder / f"worker-{i}",
                                      WARMUP_WINDOWS) for i in range(self.settings.workers)]
        if not self.lag.wait_until_stable(self.settings.workers):
            raise RuntimeError(f"the workers did not join group {self.group}; log:\n{self.workers[0].log_tail()}")
        time.sleep(3.0)  # let the idle workers settle before their memory is taken as the floor
        self.result.idle_rss_bytes = sum(sample.rss_bytes for sample in snapshot(self.workers))

    def _measure(self, producer, go, results) -> None:
        """Replay while sampling; CPU and memory are taken over the steady part, from its start to the replay's end."""
        settings = self.settings
        self.listener = FindingsListener(settings.bootstrap, self.topics).start()
        self.lag.start()
        self.progress(f"replaying {settings.hosts} hosts × {settings.channels} channels every {settings.interval_s} s "
                      f"for {settings.duration_s:g} s …")
        go.set()
        time.sleep(STEADY_FROM * settings.duration_s)
        replayer = psutil.Process(producer.pid)
        first_workers, first_replayer = snapshot(self.workers), _cpu_seconds(replayer)
        first_at = time.time()
        memory = MemoryProbe(self.workers).start()
        profiler = self._start_profile()
        try:
            self.result.replay = _wait_for_report(producer, results, settings.duration_s + 120)
        finally:
            memory.stop()
        last_workers, last_replayer = snapshot(self.workers), _cpu_seconds(replayer)
        rss = [bytes_ for _, bytes_ in memory.samples]
        (self.result.steady_rss_bytes, self.result.end_rss_bytes, self.result.median_rss_bytes,
         self.result.peak_rss_bytes) = rss_summary(rss)
        self.result.rss_floor_growth_percent = rss_floor_growth_percent(rss)
        self.result.worker_cpu_percent = cpu_percent(first_workers, last_workers)
        self.result.producer_cpu_percent = 100 * (last_replayer - first_replayer) / (time.time() - first_at)
        started = self.result.replay.started_ns / 1e9
        self.steady = (started + STEADY_FROM * settings.duration_s, started + settings.duration_s)
        self._drain()
        self.listener.stop()
        self._finish_profile(profiler)

    def _start_profile(self):
        """py-spy on the first worker for the rest of the replay, when a profile was asked for."""
        if not self.settings.profile_path:
            return None
        self.progress(f"profiling worker {self.workers[0].pid} with py-spy into {self.settings.profile_path} …")
        return start_py_spy(self.workers[0].pid, (1 - STEADY_FROM) * self.settings.duration_s,
                            self.settings.profile_path)

    def _finish_profile(self, profiler) -> None:
        if profiler is None:
            return
        _, errors = profiler.communicate(timeout=60)
        if profiler.returncode != 0:
            raise RuntimeError(f"py-spy failed ({profiler.returncode}): {errors[-1000:]}")
        with open(self.settings.profile_path) as collapsed:
            self.result.profile = summarise_collapsed(collapsed)

    def _drain(self) -> None:
        """Give the workers a few seconds to catch up, so the last windows' findings are counted."""
        self.progress("replay done; letting the workers catch up …")
        deadline = time.monotonic() + DRAIN_S
        while time.monotonic() < deadline and (not self.lag.samples or self.lag.samples[-1][2] > 0):
            time.sleep(0.5)
        time.sleep(2.0)

    def _summarise(self) -> None:
        result, (steady_from, replay_end) = self.result, self.steady
        judged_from = replay_end - (1 - LAG_TREND_FROM) * self.settings.duration_s
        samples = list(self.lag.samples)
        steady = [behind for at, _, behind in samples if steady_from <= at <= replay_end]
        result.lag_start, result.lag_end = (steady[0], steady[-1]) if steady else (0, 0)
        result.lag_slope_per_s = lag_slope([(at, behind) for at, _, behind in samples
                                            if judged_from <= at <= replay_end])
        result.committed_frames_per_s = committed_rate(samples, steady_from, replay_end)
        result.kafka_bytes = float(result.replay.wire_bytes) or float("nan")

    def _read_storage(self) -> None:
        """Frames stored per second over the steady part, and the frames table's compressed bytes, from each
        worker's chDB folder once the worker has exited (chDB opens one data path per process)."""
        per_second: dict[int, int] = {}
        compressed = 0
        for worker in self.workers:
            for row in sql(worker.dsn, "SELECT toUnixTimestamp(stored_at) AS second, count() AS frames "
                                       "FROM frames GROUP BY second"):
                per_second[row["second"]] = per_second.get(row["second"], 0) + row["frames"]
            compressed += sql(worker.dsn, "SELECT sum(data_compressed_bytes) AS bytes FROM system.parts "
                                          "WHERE database = 'reveal' AND table = 'frames' AND active")[0]["bytes"]
        self.result.frames_stored = sum(per_second.values())
        self.result.stored_frames_per_s = steady_rate(per_second, *self.steady)
        self.result.clickhouse_bytes = float(compressed)
        self._judge_delay(per_second)

    def _judge_delay(self, stored_by_second: dict[int, int]) -> None:
        """How far storage trails publication over the steady part, and whether that grows over its last half."""
        result, (steady_from, replay_end) = self.result, self.steady
        replay = result.replay
        every_second = storage_delays(stored_by_second, replay.started_ns / 1e9, self.settings.offered_frames_per_s,
                                      replay.frames)
        learned_at = replay.started_ns / 1e9 + baselines_learned_s()
        self.caught_up_at = caught_up_at(every_second, learned_at)
        result.catch_up_s = self.caught_up_at - learned_at
        delays = [(at, delay) for at, delay in every_second if steady_from <= at <= replay_end]
        if not delays:
            return
        judged_from = replay_end - (1 - LAG_TREND_FROM) * self.settings.duration_s
        result.delay_start_s, result.delay_end_s = delays[0][1], delays[-1][1]
        result.delay_slope = lag_slope([(at, delay) for at, delay in delays if at >= judged_from])
        result.falls_behind = falls_behind(result.delay_slope, result.delay_end_s)

    def _judge_latencies(self, start_ns: int) -> None:
        """Latency of every finding after its window closed, over the run and over its steady part: windows that
        closed after the first quarter and after the workers caught up with the start-up."""
        result, offset = self.result, self.result.replay.started_ns - start_ns
        caught_up = self.caught_up_at if np.isfinite(self.caught_up_at) else float("inf")
        steady_from = max(self.steady[0], caught_up)  # never caught up: no steady part
        for kind, target, steady_target in (
                ("anomaly", result.anomaly_latencies_s, result.steady_anomaly_latencies_s),
                ("alert", result.alert_latencies_s, result.steady_alert_latencies_s),
                ("peer-anomaly", result.peer_latencies_s, [])):
            found = [f for f in self.listener.findings if f.kind == kind]
            target.extend(latencies_s([f.window_end_ns for f in found], [f.received_ns for f in found], offset))
            steady = [f for f in found if f.window_end_ns + offset >= steady_from * 1e9]
            steady_target.extend(latencies_s([f.window_end_ns for f in steady], [f.received_ns for f in steady],
                                             offset))

    def delete_topics(self) -> None:
        """Remove the run's topics: a run at 150 hosts leaves half a gigabyte on the broker otherwise."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.settings.bootstrap, "log_level": 0})
        names = [self.topics.samples, self.topics.catalog, self.topics.host_windows, self.topics.anomalies,
                 self.topics.alerts, self.topics.deadletter]
        for future in admin.delete_topics(names, operation_timeout=30).values():
            try:
                future.result(30)
            except Exception:  # a topic already gone is what was wanted
                pass


def _cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def _wait_for_report(producer, results, timeout_s: float) -> ReplayReport:
    """The replay's report; an error naming the exit code if the replay process died instead."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            return results.get(timeout=1.0)
        except queue.Empty:
            if not producer.is_alive():
                raise RuntimeError(f"the replay process exited with code {producer.exitcode}") from None
    raise RuntimeError(f"the replay sent no report within {timeout_s:.0f} s")


def sql(dsn: str, query: str) -> list[dict]:
    """Rows of a query against a chDB folder, run in a child process so this one never opens a chDB path."""
    done = subprocess.run([sys.executable, "-m", "reveal.cli", "--log-level", "WARNING", "sql", "--clickhouse",
                           dsn, "--format", "jsonl", query], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"query on {dsn} failed: {done.stderr[-2000:]}")
    return [json.loads(line) for line in done.stdout.splitlines()]


def bench_pipeline(settings: PipelineBenchSettings, progress=print) -> PipelineBenchResult:
    """Run the benchmark in a temporary folder and remove its topics afterwards."""
    with tempfile.TemporaryDirectory(prefix="reveal-bench-") as directory:
        bench = PipelineBench(settings, Path(directory), progress)
        try:
            return bench.run()
        finally:
            bench.delete_topics()
