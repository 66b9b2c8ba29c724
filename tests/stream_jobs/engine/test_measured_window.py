"""A window as the engine reads it: counters become rates over steps no shorter than half the interval, gauges stay
levels, derived metrics follow the channels, frame times count in those steps, and Reveal's own share of a channel is
taken out before any of it."""

from __future__ import annotations

import numpy as np

from schemas.channels import OWN_TCP_TIME_WAIT
from stream_jobs.engine.channels import ChannelTable
from stream_jobs.engine.derived import derived_specs
from stream_jobs.engine.measured_window import WindowMeasure
from stream_jobs.engine.own_footprint import OwnFootprint
from stream_jobs.engine.windows import Window

S = 1_000_000_000


def measure_of(channels: ChannelTable, interval_s: float = 1.0) -> WindowMeasure:
    return WindowMeasure(channels.cumulative, tuple(derived_specs(channels.names)), OwnFootprint(channels),
                         interval_s)


def test_counters_become_rates_and_gauges_stay_levels_with_their_means():
    channels = ChannelTable(("disk.sectors_read.sda", "mem.Cached"), ("counter", "gauge"), ("disk", "memory"))
    timestamps = np.array([0, 1, 2, 4], dtype=np.int64) * S
    values = np.array([[0.0, 5.0], [10.0, 7.0], [30.0, 9.0], [70.0, 11.0]])
    measured = measure_of(channels)(Window(1, 0, 4 * S, timestamps, values))
    assert measured.signal[:, 0].tolist() == [10.0, 20.0, 20.0]
    assert measured.signal[:, 1].tolist() == [7.0, 9.0, 11.0]
    assert measured.means.tolist() == [50.0 / 3, 9.0]
    assert measured.seconds.tolist() == [0.0, 1.0, 2.0, 4.0] and measured.steps.tolist() == [1.0, 1.0, 2.0]
    assert not measured.worked and measured.trio is None and measured.features is None


def test_a_step_shorter_than_half_the_interval_counts_as_half_the_interval():
    channels = ChannelTable(("cpu.user.all",), ("counter",), ("cpu",))
    timestamps = np.array([0, S, S + S // 1000], dtype=np.int64)
    measured = measure_of(channels)(Window(1, 0, 2 * S, timestamps, np.array([[0.0], [100.0], [101.0]])))
    assert measured.signal[:, 0].tolist() == [100.0, 2.0]  # one tick over half a second, not over a millisecond
    assert measured.seconds.tolist() == [0.0, 1.0, 1.5] and measured.steps.tolist() == [1.0, 0.5]


def test_derived_metrics_follow_the_channels_they_are_made_of():
    channels = ChannelTable(("pmu.cycles.cpu0", "pmu.instructions.cpu0"), ("counter", "counter"), ("cpu", "cpu"))
    measure = measure_of(channels)
    timestamps = np.arange(3, dtype=np.int64) * S
    measured = measure(Window(1, 0, 3 * S, timestamps, np.array([[0.0, 0.0], [100.0, 200.0], [300.0, 300.0]])))
    assert [spec.name for spec in measure.specs] == ["pmu.ipc.cpu0"]
    assert measured.signal[:, 2].tolist() == [2.0, 0.5]


def test_reveals_own_share_is_taken_out_before_the_signal_is_read():
    channels = ChannelTable(("sock.tcp_tw", OWN_TCP_TIME_WAIT), ("gauge", "gauge"), ("network", "agent"))
    timestamps = np.arange(4, dtype=np.int64) * S
    values = np.array([[3.0, 0.0], [43.0, 40.0], [43.0, 40.0], [43.0, 40.0]])
    measured = measure_of(channels)(Window(1, 0, 4 * S, timestamps, values))
    assert measured.signal[:, 0].tolist() == [3.0, 3.0, 3.0]
