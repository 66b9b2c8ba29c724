"""Real pipeline output for the report's tests: three synthetic hosts (one named with markup) through the embedded
engine into ClickHouse, with a lab run's truth and scores, and a way to pick one section out of a rendered page."""

from __future__ import annotations

import re

from producers.synthetic import StepChange, synthetic_catalog, synthetic_frames
from sinks.clickhouse import ClickHouseWriter
from sinks.landing import ClickHouseLanding
from stream_jobs.embedded import EmbeddedRunner
from stream_jobs.engine.host_pipeline import EngineSettings
from stream_jobs.host_stage import HostStage
from stream_jobs.engine.channel_watch import WatchSettings

# A synthetic baseline of 20 windows stands for a host learned over its whole drift horizon (no cold start)
FULL_HORIZON = WatchSettings(drift_horizon_s=20.0)

T0 = 1_700_000_000_000_000_000
FRAMES_PER_HOST = 1200
HOSTILE_HOST = '<script>alert("host")</script>'
HOSTILE_DESCRIPTION = "<img src=x onerror=alert(1)> flood"
STEPS = {"alpha": (StepChange("cpu.busy.cpu1", 60.0, 25.0),), "beta": (),
         HOSTILE_HOST: (StepChange("net.rx_bytes.eth0", 80.0, 5e6),)}


def write_run(dsn: str, database: str = "reveal") -> None:
    """Three synthetic hosts through the embedded engine into ClickHouse, plus a lab run's truth and scores."""
    writer = ClickHouseWriter(dsn, database)
    runner = EmbeddedRunner(HostStage(EngineSettings(warmup_s=20, watch=FULL_HORIZON)), ClickHouseLanding(writer))
    catalogs = {host: synthetic_catalog(host) for host in STEPS}
    frames = {host: synthetic_frames(catalogs[host], T0, FRAMES_PER_HOST, seed=index, steps=steps)
              for index, (host, steps) in enumerate(STEPS.items())}
    for catalog in catalogs.values():
        runner.on_catalog(catalog)
    for index in range(FRAMES_PER_HOST):
        for host in STEPS:
            runner.on_frame(frames[host][index])
    runner.close()
    writer.add("lab_faults", [
        ["run-1", "cpu-hog", "cpu_contention", "alpha", T0 + 60 * 10**9, T0 + 120 * 10**9, "cpu", 2.0, "2 workers",
         True, '{"cpu_seconds_taken": 110.0}'],
        ["run-1", "cpu-hog", "rx_flood", HOSTILE_HOST, T0 + 80 * 10**9, T0 + 120 * 10**9, "network", 5e6,
         HOSTILE_DESCRIPTION, True, ""]])
    writer.add("lab_scores", [["run-1", "cpu-hog", mode, metric, value] for mode, metric, value in (
        ("calibrated", "precision", 0.91), ("calibrated", "strict_recall", 0.88),
        ("paper", "precision", 0.42), ("paper", "strict_recall", 0.97))])
    writer.close()


def section(html: str, key: str) -> str:
    match = re.search(rf'<section id="{key}">(.*?)</section>', html, re.S)
    assert match, f"section {key} is missing"
    return match.group(1)
