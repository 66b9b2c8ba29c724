"""Reveal at work on the host it watches (a command every two seconds, its CPU time measured): the host's baseline is
still learned in its time, a CPU fault while Reveal works opens an incident, and a fault under way while the host is
learned is told on the console, since it becomes part of the host's normal."""

from __future__ import annotations

import logging

import numpy as np

from producers.synthetic import StepChange, synthetic_frames
from schemas.channels import OWN_COMMANDS_SECONDS, OWN_CPU_USER_TICKS
from schemas.records import Catalog, Channel, Frame
from stream_jobs.cluster_stage import ClusterStage
from stream_jobs.engine.channel_watch import WatchSettings
from stream_jobs.engine.settings import EngineSettings
from stream_jobs.host_stage import HostStage

T0 = 1_700_000_000_000_000_000
WARMUP = 30
# The synthetic host's CPU time counter moves 1e6 a second; Reveal's commands use a fifth of it while they run
OWN_SHARE_PER_S = 2e5
SETTINGS = EngineSettings(warmup_s=WARMUP, watch=WatchSettings(drift_horizon_s=20.0), seed=3)
CATALOG = Catalog("h1", "c", (Channel("cpu.user.all", "cpu", "counter", "ticks", "all"),
                              Channel("cpu.user.cpu0", "cpu", "counter", "ticks", "cpu0"),
                              Channel("mem.MemTotal", "memory", "static", "bytes"),
                              Channel(OWN_COMMANDS_SECONDS, "agent", "counter", "s"),
                              Channel(OWN_CPU_USER_TICKS, "agent", "counter", "ticks")), 0.1)


def reveal_at_work(frame: Frame) -> Frame:
    """The frame with a Reveal command running for the first half of every two seconds, read once a second as the
    agent reads it: its seconds and CPU time counted, and its CPU time in the host's counters."""
    seconds = (frame.timestamp_ns - T0) / 1e9
    read_at = np.floor(seconds)
    ran_s = np.floor(read_at / 2) * 0.5 + min(read_at % 2, 1) * 0.5
    values = np.array(frame.values, dtype=np.float64)
    used = OWN_SHARE_PER_S * 2 * (np.floor(seconds / 2) * 0.5 + min(seconds % 2, 0.5))
    values[CATALOG.names.index("cpu.user.all")] += used
    values[CATALOG.names.index("cpu.user.cpu0")] += used
    values[CATALOG.names.index(OWN_COMMANDS_SECONDS)] = ran_s
    values[CATALOG.names.index(OWN_CPU_USER_TICKS)] = OWN_SHARE_PER_S * 2 * ran_s
    return Frame(frame.host, frame.cluster, frame.timestamp_ns, frame.sequence, frame.catalog_version, values)


def run(steps: tuple[StepChange, ...], frames: int = 1200) -> tuple[HostStage, list[str], list[int]]:
    """The host stage after the frames (Reveal at work throughout), the subsystems of the incidents opened, and the
    window ids at which the host was learning."""
    stage, cluster = HostStage(SETTINGS), ClusterStage(SETTINGS)
    stage.on_catalog(CATALOG)
    opened, learning = [], []
    for frame in synthetic_frames(CATALOG, T0, frames, seed=4, steps=steps):
        output = stage.on_frame(reveal_at_work(frame))
        learning += [verdict.window_id for verdict in output.verdicts if not verdict.baseline_ready]
        for summary in output.host_windows:
            opened += [a.subsystem for a in cluster.on_host_window(summary).alerts if a.state == "open"]
    return stage, opened, learning


def test_a_host_reveal_works_on_throughout_is_learned_in_its_time():
    stage, opened, learning = run(())
    assert len(learning) == WARMUP
    assert opened == []


def test_a_cpu_fault_while_reveal_works_opens_an_incident():
    _, opened, _ = run((StepChange("cpu.user.all", 60.0, 2e6),))
    assert opened == ["cpu"]


def test_a_fault_under_way_while_the_host_is_learned_is_told(caplog):
    with caplog.at_level(logging.WARNING, logger="stream_jobs.host_stage"):
        run((StepChange("cpu.user.all", 12.0, 2e6), StepChange("cpu.user.all", 24.0, -2e6)), frames=400)
    told = [record.getMessage() for record in caplog.records if "may hold an anomaly" in record.getMessage()]
    assert len(told) == 1 and "cpu.user.all" in told[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="stream_jobs.host_stage"):
        run((), frames=400)
    assert not any("may hold an anomaly" in record.getMessage() for record in caplog.records)
