"""Synthetic hosts with known behaviour, for replays, tests and benchmarks: seeded, so every run is the same."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schemas.agent_records import Catalog, Channel, Frame


@dataclass(frozen=True)
class StepChange:
    """From `start_s` seconds into the run, `channel` carries `offset` more than it otherwise would."""

    channel: str
    start_s: float
    offset: float


def synthetic_catalog(host: str, cluster: str = "synthetic", gauges: int = 8, counters: int = 4,
                      interval_s: float = 0.1) -> Catalog:
    """A small catalog of CPU gauges and network counters."""
    channels = [Channel(f"cpu.busy.cpu{i}", "cpu", "gauge", "percent", f"cpu{i}") for i in range(gauges)]
    channels += [Channel(f"net.rx_bytes.eth{i}", "network", "counter", "bytes", f"eth{i}") for i in range(counters)]
    channels.append(Channel("mem.MemTotal", "memory", "static", "bytes"))
    return Catalog(host, cluster, tuple(channels), interval_s)


def synthetic_frames(catalog: Catalog, start_ns: int, count: int, seed: int = 0,
                     steps: tuple[StepChange, ...] = (), first_tick: int = 0) -> list[Frame]:
    """`count` frames of noisy gauges around 40 % and counters growing ~1 MB/s, with the given step changes.
    With `first_tick`, the frames from that tick on, continuing the counters of the ticks before it (a long run
    generated in pieces); each piece draws its noise from its own stream."""
    rng = np.random.default_rng(seed if first_tick == 0 else (seed, first_tick))
    interval_ns = round(catalog.interval_s * 1e9)
    kinds = np.asarray(catalog.kinds)
    levels = np.where(kinds == "gauge", 40.0, 0.0) + np.where(kinds == "static", 64e9, 0.0)
    increments = np.where(kinds == "counter", 1e6 * catalog.interval_s, 0.0)
    noise = rng.normal(0.0, 1.0, size=(count, len(kinds))) * np.where(kinds == "static", 0.0, 1.0)
    noise[:, kinds == "counter"] *= 1e4
    ticks = np.arange(first_tick + 1, first_tick + count + 1, dtype=np.float64)
    values = levels + ticks[:, None] * increments + noise
    for step in steps:
        column = catalog.names.index(step.channel)
        first = int(round(step.start_s / catalog.interval_s))
        stepped = ticks - 1 >= first
        values[stepped, column] += step.offset if kinds[column] != "counter" else \
            step.offset * catalog.interval_s * (ticks[stepped] - first)
    return [Frame(catalog.host, catalog.cluster, start_ns + tick * interval_ns, tick, catalog.version, row)
            for tick, row in enumerate(values, start=first_tick)]
