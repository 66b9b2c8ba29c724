"""Synthetic hosts with known behaviour, for replays, tests and benchmarks: seeded, so every run is the same."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schemas.records import Catalog, Channel, Frame


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
                     steps: tuple[StepChange, ...] = ()) -> list[Frame]:
    """`count` frames of noisy gauges around 40 % and counters growing ~1 MB/s, with the given step changes."""
    rng = np.random.default_rng(seed)
    interval_ns = round(catalog.interval_s * 1e9)
    kinds = np.asarray(catalog.kinds)
    levels = np.where(kinds == "gauge", 40.0, 0.0) + np.where(kinds == "static", 64e9, 0.0)
    increments = np.where(kinds == "counter", 1e6 * catalog.interval_s, 0.0)
    noise = rng.normal(0.0, 1.0, size=(count, len(kinds))) * np.where(kinds == "static", 0.0, 1.0)
    noise[:, kinds == "counter"] *= 1e4
    values = levels + np.cumsum(np.broadcast_to(increments, (count, len(kinds))), axis=0) + noise
    for step in steps:
        column = catalog.names.index(step.channel)
        first = int(round(step.start_s / catalog.interval_s))
        values[first:, column] += step.offset if kinds[column] != "counter" else \
            step.offset * catalog.interval_s * np.arange(1, max(count - first, 0) + 1)
    return [Frame(catalog.host, catalog.cluster, start_ns + i * interval_ns, i, catalog.version, row)
            for i, row in enumerate(values)]
