"""What a fault did as the host's own telemetry shows it: a counter's rate while the fault was in force against its
rate over the run's baseline, e.g. the lossy host's TCP retransmissions during a packet-loss fault; for a fault in
force from the start (the baseline holds it too), against the median of its peers' rates over the same span."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

from producers.recording import read_recording
from schemas.channels import TCP_RETRANSMITS
from schemas.records import Catalog, Frame
from reveal.lab.truth import FaultLabel

NS_PER_S = 1_000_000_000
EVIDENCE_CHANNEL = {"packet_loss": TCP_RETRANSMITS}


@dataclass(frozen=True)
class CounterRates:
    """A counter's mean rate per second during a fault on the fault's host, and over the reference: the baseline, or
    for a fault from the start its peers during the fault."""

    fault: str
    host: str
    magnitude: float
    channel: str
    during_per_s: float
    baseline_per_s: float
    reference: str = "over the baseline"

    def describe(self) -> str:
        return (f"{self.fault} {self.magnitude:g} on {self.host}: {self.channel} {self.during_per_s:.3g}/s during "
                f"the fault, {self.baseline_per_s:.3g}/s {self.reference}")


def counter_series(items: Iterable[Catalog | Frame], channel: str) -> tuple[np.ndarray, np.ndarray]:
    """(timestamps in ns, values) of one channel through a recording, across catalog versions; frames whose
    catalog lacks the channel are left out."""
    position: dict[int, int] = {}
    times, values = [], []
    for item in items:
        if isinstance(item, Catalog):
            if channel in item.names:
                position[item.version] = item.names.index(channel)
            continue
        index = position.get(item.catalog_version)
        if index is not None:
            times.append(item.timestamp_ns)
            values.append(item.values[index])
    return np.asarray(times, dtype=np.int64), np.asarray(values, dtype=np.float64)


def mean_rate(times_ns: np.ndarray, values: np.ndarray, start_ns: int, end_ns: int) -> float:
    """A cumulative counter's growth per second between the first and last sample inside [start_ns, end_ns]."""
    inside = (times_ns >= start_ns) & (times_ns <= end_ns) & np.isfinite(values)
    if inside.sum() < 2:
        return float("nan")
    first, last = np.flatnonzero(inside)[[0, -1]]
    return float((values[last] - values[first]) / ((times_ns[last] - times_ns[first]) / NS_PER_S))


def fault_rates(truth: Iterable[FaultLabel], recordings: dict[str, Path], baseline: tuple[int, int]) -> list[CounterRates]:
    """The evidence channel's rate during each fault that has one, and over the baseline, from its host's
    recording."""
    found = []
    for label in truth:
        channel = EVIDENCE_CHANNEL.get(label.fault)
        if channel is None or label.host not in recordings:
            continue
        during = _rate(recordings[label.host], channel, label.start_ns, label.end_ns)
        if label.from_start:
            peers = [_rate(path, channel, label.start_ns, label.end_ns) for host, path in recordings.items()
                     if host != label.host]
            found.append(CounterRates(label.fault, label.host, label.magnitude, channel, during,
                                      float(np.nanmedian(peers)) if peers else float("nan"), "on its peers"))
        else:
            found.append(CounterRates(label.fault, label.host, label.magnitude, channel, during,
                                      _rate(recordings[label.host], channel, *baseline)))
    return found


def _rate(recording: Path, channel: str, start_ns: int, end_ns: int) -> float:
    times, values = counter_series(read_recording(recording), channel)
    return mean_rate(times, values, start_ns, end_ns)
