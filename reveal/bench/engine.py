"""Measures the engine per host-window: µs for signals, features, the channel watch, each detector and attribution,
windows per second per core, and memory per tracked host (as warmed, and with the channel watch's history full). Used by `reveal bench engine`; figures are printed, never asserted."""

from __future__ import annotations

import time
import tracemalloc
from dataclasses import dataclass, field

import numpy as np

from producers.synthetic import synthetic_catalog, synthetic_frames
from stream_jobs.engine.channels import ChannelTable
from stream_jobs.engine.host_pipeline import EngineSettings, HostPipeline

GOALS = {"total_ms_per_host_window": 2.0, "memory_mb_per_host": 2.0}


@dataclass
class EngineBenchResult:
    hosts: int
    channels: int
    features: int = 0
    kept_channels: int = 0
    micros: dict = field(default_factory=dict)
    memory_bytes_per_host: float = 0.0
    watch_history_bytes: float = 0.0
    baseline_to_fill_bytes: float = 0.0  # rows the rolling baseline keeps once full, beyond those it holds
    streak_micros: float = 0.0  # the watch's confirmation, paid only in windows where a channel holds a streak

    @property
    def total_ms(self) -> float:
        return sum(self.micros.values()) / 1e3


def _catalog(channels: int):
    gauges = int(channels * 0.6)
    return synthetic_catalog("bench", gauges=gauges, counters=channels - gauges - 1)


def _timed(function, repeats: int) -> float:
    started = time.perf_counter()
    for _ in range(repeats):
        function()
    return (time.perf_counter() - started) / repeats * 1e6


def bench_engine(hosts: int, channels: int, repeats: int = 20, progress=print) -> EngineBenchResult:
    """Warm `hosts` pipelines on synthetic hosts of `channels` channels, then time each stage of one window."""
    catalog = _catalog(channels)
    table = ChannelTable.of_catalog(catalog)
    settings = EngineSettings(warmup_s=60.0)
    frames = synthetic_frames(catalog, 1_700_000_000_000_000_000, 10 * 70, seed=1)
    progress(f"warming {hosts} host pipelines of {len(catalog.channels)} channels …")
    _warm(HostPipeline(table, settings), frames)  # modules a first fit imports are not memory of any host
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    pipelines = [_warm(HostPipeline(table, settings), frames) for _ in range(hosts)]
    per_host = (tracemalloc.get_traced_memory()[0] - before) / hosts
    tracemalloc.stop()
    pipeline = pipelines[0]
    window = pipeline.assembler._cut(pipeline.assembler._next_end)
    result = EngineBenchResult(hosts, len(catalog.channels), len(pipeline.layout.names), int(pipeline.kept.sum()),
                               memory_bytes_per_host=per_host)
    seconds = window.timestamps_ns.astype(np.float64) / 1e9
    signal = pipeline.measure.signal(window)
    features = pipeline.layout.compute(seconds, signal[:, pipeline.kept])
    batch = features[None, :]
    result.micros["signals_and_derived"] = _timed(lambda: pipeline.measure.signal(window), repeats)
    result.micros["features"] = _timed(lambda: pipeline.layout.compute(seconds, signal[:, pipeline.kept]), repeats)
    for detector in pipeline.ensemble.detectors:
        result.micros[f"detector_{detector.name}"] = _timed(lambda d=detector: d.score(batch), repeats)
    z = pipeline.ensemble.detectors[0].z(batch)[0]
    result.micros["attribution"] = _timed(lambda: pipeline._evidence(features, z), repeats)
    means = signal.mean(axis=0)
    columns = pipeline.columns
    result.micros["channel_watch"] = _timed(
        lambda: pipeline.watch.judge(columns.of_window(signal, means), lambda: columns.confirmations(signal)), repeats)
    result.streak_micros = _timed(lambda: columns.confirmations(signal), repeats)
    result.watch_history_bytes = watch_history_bytes(pipeline)
    result.baseline_to_fill_bytes = float(pipeline._recent.bytes_to_fill(len(pipeline.layout.names)))
    return result


def _warm(pipeline: HostPipeline, frames) -> HostPipeline:
    for frame in frames:
        pipeline.push(frame.timestamp_ns, frame.values)
    return pipeline


def watch_history_bytes(pipeline: HostPipeline) -> float:
    """What the channel watch's kept windows hold once full (float16 steps of every watched column)."""
    return float(pipeline.watch.kept.bytes_once_full(len(pipeline.watch.event_floor)))
