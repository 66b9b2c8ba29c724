"""Synthetic ML-like telemetry with planted faults, to judge `reveal detect` on data whose truth is known.

Every host runs the same job: a 0.5 s training step (GPU utilisation and network traffic oscillate with it), an input
pipeline whose load moves eight per-core CPU channels together, an evaluation pass every two minutes (GPU and network
fall for 6 s), interrupts, a sparse retransmission counter and memory that wanders slowly. Faults are planted one at a
time, each on its own host and interval, after a clean lead-in:

- mean_shift: two of the eight correlated per-core channels rise by four times their own noise;
- variance_burst: three interrupt channels keep their level but their noise grows fivefold;
- counter_burst: the retransmission counter gains 40 per sample;
- correlation_break: received bytes stop following sent bytes (same level and spread, the other phase);
- slow_drift: memory in use climbs steadily, by 20 % over five minutes;
- host_step: all eight cores of one host step up by 15 points while its peers stay as they were.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FAULT_KINDS = ("mean_shift", "variance_burst", "counter_burst", "correlation_break", "slow_drift", "host_step")
CORES = 8
IRQS = 3


@dataclass(frozen=True)
class PlantedFault:
    """One planted fault: its kind, host, interval (seconds from the start) and the columns it changes."""

    kind: str
    host: str
    start_s: float
    end_s: float
    columns: tuple[str, ...]


def column_names() -> list[str]:
    """The metric columns every host reports."""
    return (["gpu_util", "net_tx_bytes", "net_rx_bytes", "mem_used_bytes", "tcp_retrans"]
            + [f"cpu_busy_core{c}" for c in range(CORES)] + [f"irq_count_{i}" for i in range(IRQS)])


def plan(hosts: list[str], lead_in_s: float, fault_s: float, gap_s: float, kinds=FAULT_KINDS) -> list[PlantedFault]:
    """One fault of each kind, in turn on each host, one after another after the clean lead-in."""
    faults, start = [], lead_in_s
    for index, kind in enumerate(kinds):
        length = 300.0 if kind == "slow_drift" else fault_s
        faults.append(PlantedFault(kind, hosts[index % len(hosts)], start, start + length, _columns_of(kind)))
        start += length + gap_s
    return faults


def _columns_of(kind: str) -> tuple[str, ...]:
    return {"mean_shift": ("cpu_busy_core2", "cpu_busy_core5"),
            "variance_burst": tuple(f"irq_count_{i}" for i in range(IRQS)),
            "counter_burst": ("tcp_retrans",), "correlation_break": ("net_rx_bytes",),
            "slow_drift": ("mem_used_bytes",),
            "host_step": tuple(f"cpu_busy_core{c}" for c in range(CORES))}[kind]


def host_table(host_index: int, duration_s: float, interval_s: float, seed: int,
               faults: list[PlantedFault], host: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """One host's timestamps (seconds from the start) and columns, with the faults planted on it."""
    rng = np.random.default_rng([seed, host_index])
    t = np.arange(0.0, duration_s, interval_s)
    n = len(t)
    step = np.sin(2 * np.pi * t / 0.5 + rng.uniform(0, 2 * np.pi))
    evaluating = (t % 120.0) >= 114.0
    loader = np.sin(2 * np.pi * t / 7.0 + rng.uniform(0, 2 * np.pi)) + 0.3 * np.sin(2 * np.pi * t / 31.0)
    columns = {
        "gpu_util": 85 + 6 * step - 20 * evaluating + rng.normal(0, 2, n),
        "net_tx_bytes": 1e8 * (1 + 0.3 * step) * np.where(evaluating, 0.5, 1.0) + rng.normal(0, 2e6, n),
        "mem_used_bytes": 4e10 + np.cumsum(rng.normal(0, 2e6, n)) + rng.normal(0, 5e7, n),
        "tcp_retrans": rng.poisson(0.02, n).astype(np.float64),
    }
    columns["net_rx_bytes"] = 0.9 * columns["net_tx_bytes"] + rng.normal(0, 2e6, n)
    for c in range(CORES):
        columns[f"cpu_busy_core{c}"] = 40 + 10 * loader + rng.normal(0, 3, n)
    for i in range(IRQS):
        columns[f"irq_count_{i}"] = 1000 + 50 * loader + rng.normal(0, 20, n)
    for fault in faults:
        if fault.host == host:
            _plant(fault, t, columns, rng)
    return t, columns


def _plant(fault: PlantedFault, t: np.ndarray, columns: dict[str, np.ndarray], rng) -> None:
    inside = (t >= fault.start_s) & (t < fault.end_s)
    count = int(inside.sum())
    if fault.kind == "mean_shift":
        for name in fault.columns:
            columns[name][inside] += 4 * 3
    elif fault.kind == "variance_burst":
        for name in fault.columns:
            columns[name][inside] += rng.normal(0, 4 * 20, count)
    elif fault.kind == "counter_burst":
        columns["tcp_retrans"][inside] += 40
    elif fault.kind == "correlation_break":
        tx = columns["net_tx_bytes"][inside]
        columns["net_rx_bytes"][inside] = 0.9 * (2 * tx.mean() - tx) + rng.normal(0, 2e6, count)
    elif fault.kind == "slow_drift":
        columns["mem_used_bytes"][inside] += 0.2 * 4e10 * (t[inside] - fault.start_s) / (fault.end_s - fault.start_s)
    elif fault.kind == "host_step":
        for name in fault.columns:
            columns[name][inside] += 15
    else:
        raise ValueError(f"unknown fault kind {fault.kind!r}; expected one of {FAULT_KINDS}")


def planted_rows(hosts: list[str], duration_s: float, interval_s: float, seed: int, start_epoch_s: float,
                 faults: list[PlantedFault]) -> dict[str, np.ndarray | list]:
    """Every host's rows as columns of one table: timestamp (epoch seconds), host, then the metric columns."""
    table: dict[str, list] = {"timestamp": [], "host": [], **{name: [] for name in column_names()}}
    for index, host in enumerate(hosts):
        t, columns = host_table(index, duration_s, interval_s, seed, faults, host)
        table["timestamp"].append(start_epoch_s + t)
        table["host"].append(np.full(len(t), host))
        for name in column_names():
            table[name].append(columns[name])
    return {name: np.concatenate(parts) for name, parts in table.items()}
