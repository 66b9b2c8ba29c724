"""The agent bench's own arithmetic and its kernel floor: the figures per channel-sample and per core from what was
measured, and the bare reads of an agent's files on its schedule, every file closed afterwards."""

import os
import time

import numpy as np
import pytest

from producers.agent import Agent, AgentSettings
from producers.collectors.meminfo import MemInfoCollector
from producers.fast_read.scanned_layout import _tokenscan
from reveal.bench.agent import (AgentBenchResult, AgentProcessFigures, _process_cpu_seconds, _read_each_in_python,
                                _status_bytes, kernel_floor, wake_floor)
from schemas.records import Catalog, Frame


class Discard:
    def on_catalog(self, catalog: Catalog) -> None:
        pass

    def on_frame(self, frame: Frame) -> None:
        pass

    def end_block(self) -> None:
        pass


def test_figures_are_per_channel_sample_and_per_core():
    result = AgentBenchResult(channels=100, frames=50, seconds=5.0, cpu_seconds=0.025, sampling_cpu_seconds=0.01,
                              wire_bytes=6000.0, rest_bytes=2500.0, rest_values_bytes=2000.0,
                              kernel_floor_cpu_seconds=0.005, wake_floor_cpu_seconds=0.002, wake_floor_seconds=2.0)
    figures = result.figures()
    assert result.channel_samples == 5000
    assert figures["cpu_percent_of_core"] == pytest.approx(0.5)
    assert figures["sampling_thread_percent_of_core"] == pytest.approx(0.2)
    assert figures["cpu_us_per_channel_sample"] == pytest.approx(5.0)
    assert figures["wire_bytes_per_channel_sample"] == pytest.approx(1.2)
    assert figures["rest_bytes_per_channel_sample"] == pytest.approx(0.5)
    assert figures["rest_values_bytes_per_channel_sample"] == pytest.approx(0.4)
    assert figures["kernel_floor_percent_of_core"] == pytest.approx(0.1)
    assert figures["wake_floor_percent_of_core"] == pytest.approx(0.1)


def test_the_kernel_floor_reads_each_file_bare_and_closes_them(procfs):
    agent = Agent(AgentSettings(host="bench-host", interval_s=0.05), Discard(), [MemInfoCollector(procfs)])
    open_before = len(os.listdir("/proc/self/fd"))
    try:
        files, cpu_s = kernel_floor(agent, 0.3)
    finally:
        agent.close()
    assert files == 1 and 0 <= cpu_s < 0.3
    assert len(os.listdir("/proc/self/fd")) <= open_before


def test_a_process_is_measured_from_outside_through_proc():
    busy_until = time.process_time() + 0.2
    while time.process_time() < busy_until:
        pass
    assert _process_cpu_seconds(os.getpid()) >= 0.2
    assert 10 << 20 < _status_bytes(os.getpid(), "VmRSS") <= _status_bytes(os.getpid(), "VmHWM")
    figures = AgentProcessFigures(40 << 20, 45 << 20, 0.3, 60.0).figures()
    assert figures == {"process_rss_mib": 40.0, "process_peak_rss_mib": 45.0, "process_cpu_percent_of_core": 0.5}


def test_the_bare_read_reads_every_file_whole_compiled_or_not(procfs):
    paths = [procfs / "meminfo", procfs / "stat"]
    fds = np.array([os.open(path, os.O_RDONLY) for path in paths], dtype=np.int32)
    try:
        whole = sum(path.stat().st_size for path in paths)
        assert _tokenscan.read_each(fds, bytearray(1 << 16)) == whole
        assert _read_each_in_python(fds, bytearray(1 << 16)) == whole
    finally:
        for fd in fds:
            os.close(int(fd))


@pytest.mark.parametrize("publish_every_s", [0.0, 0.1])
def test_the_wake_up_floor_costs_less_than_the_time_it_spans(publish_every_s):
    cpu_s = wake_floor(AgentSettings(host="bench-host", interval_s=0.02, publish_every_s=publish_every_s), 0.3)
    assert 0 < cpu_s < 0.3


def test_the_compiled_schedule_reads_each_file_at_the_ticks_its_interval_divides(procfs):
    fds = np.array([os.open(procfs / "meminfo", os.O_RDONLY)], dtype=np.int32)
    try:
        started = time.monotonic_ns()
        last = _tokenscan.read_each_on_schedule(fds, np.array([2], np.int32), bytearray(1 << 16), started,
                                                10_000_000, -1, 5)
        assert last == 4 and time.monotonic_ns() - started >= 40_000_000
        late = _tokenscan.read_each_on_schedule(fds, np.array([2], np.int32), bytearray(1 << 16), started,
                                                10_000_000, 4, 5)
        assert late == 5, "a schedule asked for no tick still keeps the next one"
    finally:
        os.close(int(fds[0]))
    with pytest.raises(ValueError, match="same length"):
        _tokenscan.read_each_on_schedule(fds, np.zeros(0, np.int32), bytearray(1), 0, 1, -1, 1)
