"""The pipeline benchmark's settings, its result and the arithmetic that turns the run's samples (latencies, commit
lag, storage delay, CPU, memory) into the figures `reveal bench pipeline` prints next to its goals."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from reveal.bench.paced_replay import FleetSettings, ReplayReport
from reveal.bench.pipeline_probes import ProcessSample
from reveal.bench.stack_profile import ProfileSummary
from stream_jobs.engine.host_pipeline import EngineSettings

WARMUP_S = 10.0  # the workers' warm-up: ten windows at the engine's stride of 1 s
GOALS = {"channel_samples_per_s": (">=", 1_000_000.0), "anomaly_latency_p99_s": ("<=", 1.5),
         "alert_latency_p99_s": ("<=", 1.5), "anomaly_latency_steady_part_p99_s": ("<=", 1.5),
         "alert_latency_steady_part_p99_s": ("<=", 1.5), "memory_mb_per_host": ("<=", 2.0)}
CAUGHT_UP_S = 2.0  # storage this close behind publication: the workers have caught up (a flush a second, a linger)
CAUGHT_UP_HELD_S = 10.0  # … and stays so this long: the seconds before the start-up's fits pile up do not count


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
    publish_every_s: float = 1.0

    @property
    def offered_frames_per_s(self) -> float:
        return self.hosts / self.interval_s

    def fleet(self) -> FleetSettings:
        """The replayed fleet: a step change on one host in ten, late enough for every baseline to be learnt."""
        step_at = max(0.7 * self.duration_s, WARMUP_S + 8.0)
        return FleetSettings(self.hosts, self.channels, self.interval_s, self.duration_s, step_at,
                             max(1, self.hosts // 10), self.seed, self.publish_every_s)


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
    # the same without what the workers' embedded ClickHouse tracks for itself (a worker writing to a server holds
    # none of it): idle, median and peak over the steady part
    idle_embedded_bytes: int = 0
    median_own_bytes: int = 0
    peak_own_bytes: int = 0
    median_embedded_bytes: int = 0
    kafka_bytes: float = float("nan")
    clickhouse_bytes: float = float("nan")
    replay: ReplayReport = field(default_factory=ReplayReport)
    profile: ProfileSummary | None = None
    worker_exit_codes: list[int] = field(default_factory=list)

    @property
    def idle_own_bytes(self) -> int:
        return max(self.idle_rss_bytes - self.idle_embedded_bytes, 0)

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
                "embedded_clickhouse_median_mb": self.median_embedded_bytes / 2**20,
                "memory_mb_per_host": memory_per_host(self.idle_own_bytes, self.median_own_bytes,
                                                      self.settings.hosts) / 2**20,
                "memory_mb_per_host_at_peak": memory_per_host(self.idle_own_bytes, self.peak_own_bytes,
                                                              self.settings.hosts) / 2**20,
                "memory_mb_per_host_with_embedded_clickhouse": memory_per_host(
                    self.idle_rss_bytes, self.median_rss_bytes, self.settings.hosts) / 2**20,
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
    engine = EngineSettings(warmup_s=WARMUP_S)
    return engine.window_s + engine.warmup_windows * engine.stride_s


def caught_up_at(delays: list[tuple[float, float]], after_s: float, within_s: float = CAUGHT_UP_S,
                 held_s: float = CAUGHT_UP_HELD_S) -> float:
    """The first second at or after `after_s` from which storage trails publication by at most `within_s` for
    `held_s` seconds running (NaN if it never does): when the workers have worked off the start-up, in which every
    host learns its baseline at once. A second within it before the baselines' fits pile up is not caught up.

    >>> caught_up_at([(10.0, 0.5), (11.0, 4.0), (12.0, 1.0), (13.0, 3.0), (14.0, 1.5), (15.0, 0.8)], 10.0, 2.0, 2.0)
    14.0
    """
    run_from = None
    for at, delay in delays:
        if at < after_s:
            continue
        if delay > within_s:
            run_from = None
        elif run_from is None:
            run_from = at
        if run_from is not None and at - run_from + 1 >= held_s:
            return run_from
    return float("nan")


def memory_steady_after_s() -> float:
    """Seconds into each host's run after which the bench's workers hold all they keep of it (its rolling baseline
    and its channel watch's windows): memory per host taken earlier is short of what a long-running worker holds."""
    return EngineSettings(warmup_s=WARMUP_S).state_full_s


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
