"""The pipeline benchmark's arithmetic: latencies, lag trend, steady rates, CPU and memory per host."""

import doctest
import math

import pytest

from reveal.bench import pipeline_figures
from reveal.bench.paced_replay import ReplayReport
from reveal.bench.pipeline_figures import (WARMUP_S, PipelineBenchResult, PipelineBenchSettings, caught_up_at,
                                           committed_rate, cpu_percent, falls_behind, lag_slope, latencies_s,
                                           memory_per_host, memory_steady_after_s, percentiles,
                                           rss_floor_growth_percent, steady_rate, storage_delays)
from reveal.bench.pipeline_probes import ProcessSample
from stream_jobs.engine.settings import EngineSettings


def test_percentiles_of_nothing_are_nan_and_of_values_interpolate():
    assert all(math.isnan(p) for p in percentiles([]))
    assert percentiles([float(v) for v in range(1, 101)], (50, 99)) == pytest.approx((50.5, 99.01))


def test_latency_counts_from_the_window_end_moved_onto_the_wall_clock():
    offset = 5_000_000_000  # the replay started five seconds after the frames' first timestamp
    ends = [10_000_000_000, 11_000_000_000]
    received = [15_400_000_000, 17_000_000_000]
    assert latencies_s(ends, received, offset) == pytest.approx([0.4, 1.0])


def test_lag_slope_is_the_least_squares_growth_per_second():
    assert lag_slope([(100.0 + t, 50 + 30 * t) for t in range(10)]) == pytest.approx(30.0)
    assert lag_slope([(100.0, 7)]) == 0.0
    assert lag_slope([(100.0, 7), (100.0, 9)]) == 0.0


def test_workers_fall_behind_when_storage_trails_by_over_three_seconds_and_does_not_catch_up():
    assert falls_behind(growth_s_per_s=0.1, end_delay_s=8.0)
    assert not falls_behind(growth_s_per_s=0.1, end_delay_s=2.0)  # a flush a second and a window in flight
    assert falls_behind(growth_s_per_s=0.0, end_delay_s=8.0)  # a backlog that does not shrink
    assert not falls_behind(growth_s_per_s=-0.2, end_delay_s=8.0)  # catching up


def test_storage_delay_counts_frames_published_but_not_yet_stored_in_seconds_of_publication():
    stored = {100: 500, 102: 3000}  # nothing stored during second 101
    delays = storage_delays(stored, started_s=99.5, frames_per_s=1000.0, frames_sent=2500)
    assert [at for at, _ in delays] == [101.0, 102.0, 103.0]
    assert [delay for _, delay in delays] == pytest.approx([1.0, 2.0, 0.0])


def test_workers_catch_up_when_storage_is_back_within_two_seconds_for_good_after_the_baselines():
    delays = [(100.0, 0.5), (101.0, 6.0), (102.0, 4.0), (103.0, 2.5), (104.0, 1.2), (105.0, 3.0)]
    delays += [(106.0 + i, 0.9) for i in range(12)]
    assert caught_up_at(delays, after_s=101.0) == 106.0, "104 s was within, but not for long"
    assert caught_up_at(delays, after_s=101.0, held_s=1.0) == 104.0
    assert caught_up_at([(100.0 + i, 0.5) for i in range(12)], after_s=100.0) == 100.0
    assert math.isnan(caught_up_at(delays[:10], after_s=101.0))


def test_memory_floor_growth_ignores_transient_peaks_but_not_a_rising_floor():
    merges = [500, 500, 700, 500, 900, 500, 800, 500, 1000, 500] * 2
    assert rss_floor_growth_percent(merges) == pytest.approx(0.0)
    leaking = [500 + 10 * i for i in range(20)]
    assert rss_floor_growth_percent(leaking) > 30.0
    assert math.isnan(rss_floor_growth_percent([500]))


def test_memory_per_host_is_growth_over_the_idle_worker_shared_by_the_hosts():
    assert memory_per_host(200 << 20, 500 << 20, 150) == pytest.approx((300 << 20) / 150)
    assert memory_per_host(200 << 20, 190 << 20, 10) == 0.0
    assert memory_per_host(0, 100, 0) == 100.0


def test_steady_rate_averages_whole_seconds_inside_the_span_only():
    per_second = {99: 10_000, 100: 1500, 101: 1400, 102: 1600, 103: 9_000}
    assert steady_rate(per_second, 99.5, 103.0) == pytest.approx(1500.0)
    assert steady_rate(per_second, 103.0, 103.5) == 0.0


def test_cpu_percent_sums_processes_over_the_longest_wall_span():
    first = [ProcessSample(10.0, 1.0, 0), ProcessSample(10.0, 2.0, 0)]
    last = [ProcessSample(20.0, 8.0, 0), ProcessSample(20.0, 5.0, 0)]
    assert cpu_percent(first, last) == pytest.approx(100.0)


def test_committed_rate_uses_committed_records_inside_the_span():
    samples = [(0.0, 0, 0), (10.0, 1000, 50), (20.0, 3000, 40), (30.0, 5000, 60), (40.0, 9000, 0)]
    assert committed_rate(samples, 10.0, 30.0) == pytest.approx(200.0)
    assert committed_rate(samples, 12.0, 18.0) == 0.0


def test_figures_scale_frames_by_channels_and_split_bytes_per_channel_sample():
    settings = PipelineBenchSettings(hosts=150, channels=700, interval_s=0.1, duration_s=60.0)
    result = PipelineBenchResult(settings, frames_stored=90_000, stored_frames_per_s=1500.0,
                                 idle_rss_bytes=300 << 20, median_rss_bytes=600 << 20, kafka_bytes=630e6,
                                 idle_embedded_bytes=10 << 20, median_own_bytes=515 << 20,
                                 median_embedded_bytes=85 << 20,
                                 clickhouse_bytes=504e6, replay=ReplayReport(frames=90_000),
                                 anomaly_latencies_s=[0.5, 0.7, 2.0], steady_alert_latencies_s=[0.2] * 99 + [9.0])
    figures = result.figures()
    assert figures["channel_samples_per_s"] == pytest.approx(1_050_000.0)
    assert figures["offered_channel_samples_per_s"] == pytest.approx(1_050_000.0)
    assert figures["memory_mb_per_host_with_embedded_clickhouse"] == pytest.approx(2.0)
    assert figures["memory_mb_per_host"] == pytest.approx(1.5) and figures["memory_mb_per_host_at_peak"] == 0.0
    assert figures["embedded_clickhouse_median_mb"] == pytest.approx(85.0)
    assert figures["kafka_bytes_per_channel_sample"] == pytest.approx(10.0)
    assert figures["clickhouse_bytes_per_channel_sample"] == pytest.approx(8.0)
    assert figures["anomaly_latency_p50_s"] == pytest.approx(0.7)
    assert math.isnan(figures["alert_latency_p99_s"])
    assert figures["alert_latency_steady_part_p99_s"] == pytest.approx(0.2 + 0.01 * 8.8)
    assert math.isnan(figures["anomaly_latency_steady_part_p99_s"])


def test_the_step_change_comes_after_the_baseline_is_learnt_even_in_short_runs():
    assert PipelineBenchSettings(hosts=2, duration_s=20.0).fleet().step_at_s > WARMUP_S + 3
    fleet = PipelineBenchSettings(hosts=150, duration_s=60.0).fleet()
    assert fleet.step_at_s == pytest.approx(42.0) and fleet.stepped_hosts == 15 and fleet.ticks == 600


def test_the_docstring_examples_hold():
    assert doctest.testmod(pipeline_figures).failed == 0


def test_the_bench_knows_when_its_workers_hold_all_they_keep_of_each_host():
    settings = EngineSettings(warmup_s=WARMUP_S)
    assert memory_steady_after_s() == settings.state_full_s > settings.rolling_baseline_full_s
    assert 600 < memory_steady_after_s() < 1200
