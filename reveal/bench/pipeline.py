"""Measures the whole distributed pipeline on this machine: N synthetic hosts replayed in real time through the real
broker into real Faust workers that store in chDB. Used by `reveal bench pipeline`; figures are printed, never
asserted.

Figures (reveal/bench/pipeline_figures.py): sustained channel-samples per second stored, anomaly and alert latency
after their window closed, the consumer group's lag and whether it grows, worker CPU and memory per tracked host, and
bytes per channel-sample on Kafka and in ClickHouse.
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
from pathlib import Path

import numpy as np
import psutil

from reveal.bench.paced_replay import ReplayReport, replay_fleet
from reveal.bench.pipeline_figures import (WARMUP_S, PipelineBenchResult, PipelineBenchSettings,
                                           baselines_learned_s, caught_up_at, committed_rate, cpu_percent,
                                           falls_behind, lag_slope, latencies_s, rss_floor_growth_percent,
                                           rss_summary, steady_rate, storage_delays)
from reveal.bench.pipeline_probes import FindingsListener, LagProbe, MemoryProbe, WorkerProcess, snapshot
from reveal.bench.stack_profile import start_py_spy, summarise_collapsed
from schemas.topics import TopicNames, ensure_topics

STEADY_FROM = 0.25  # share of the run before the steady part starts (start-up and first catch-up left out)
LAG_TREND_FROM = 0.5  # share of the run before lag growth is judged
DRAIN_S = 10.0
# The run's busiest topics keep only their last quarter hour, in small segments, so that an hour at 100 hosts does
# not fill the broker's disk (~9 MB/s of frames and host-window summaries).
BENCH_TOPIC_LIMITS = {"retention.ms": str(15 * 60 * 1000), "segment.bytes": str(64 << 20)}


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
                                      WARMUP_S) for i in range(self.settings.workers)]
        if not self.lag.wait_until_stable(self.settings.workers):
            raise RuntimeError(f"the workers did not join group {self.group}; log:\n{self.workers[0].log_tail()}")
        time.sleep(3.0)  # let the idle workers settle before their memory is taken as the floor
        idle = snapshot(self.workers)
        self.result.idle_rss_bytes = sum(sample.rss_bytes for sample in idle)
        self.result.idle_embedded_bytes = sum(sample.embedded_storage_bytes for sample in idle)

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
        rss = [bytes_ for _, bytes_, _ in memory.samples]
        (self.result.steady_rss_bytes, self.result.end_rss_bytes, self.result.median_rss_bytes,
         self.result.peak_rss_bytes) = rss_summary(rss)
        embedded = [bytes_ for _, _, bytes_ in memory.samples]
        own = [max(total - part, 0) for total, part in zip(rss, embedded)]
        *_, self.result.median_own_bytes, self.result.peak_own_bytes = rss_summary(own)
        self.result.median_embedded_bytes = rss_summary(embedded)[2]
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
        result.committed_frames_per_s = (committed_rate(samples, steady_from, replay_end)
                                         * self.settings.fleet().frames_per_message)
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
