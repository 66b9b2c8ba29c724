"""The `train` workload: one rank of data-parallel training, each step a compute phase then a ring allreduce of
the gradient."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from stream_jobs.lab.workloads.common import MIB, Endpoint, JsonLines, MatmulWork, Stop, now, say
from stream_jobs.lab.workloads.ring import RingLinks, connect_ring, ring_allreduce
from stream_jobs.lab.workloads.transport import listen


@dataclass(frozen=True)
class TrainSettings:
    rank: int
    peers: tuple[Endpoint, ...]
    gradient_mb: float = 4.0
    compute_ms: float = 80.0
    matrix_size: int = 256
    accelerator_ms: float = 400.0
    connect_timeout: float = 30.0
    io_timeout: float = 30.0


def run_train(settings: TrainSettings, stop: Stop, log: JsonLines) -> None:
    """Training steps: a compute phase (CPU matmuls, then a wait standing for accelerator kernels the host CPU does
    not see), then a ring allreduce of the gradient. No slack between steps, so a slower phase means a slower step."""
    work = MatmulWork.calibrated(settings.matrix_size, settings.compute_ms / 1e3, seed=settings.rank)
    gradient = np.random.default_rng(settings.rank).standard_normal(int(settings.gradient_mb * MIB) // 4,
                                                                   dtype=np.float32)
    say(f"train: rank {settings.rank} of {len(settings.peers)}, {work.repeats} matmuls per step, "
        f"{gradient.nbytes} gradient bytes")
    with listen(settings.peers[settings.rank]) as listener:
        links = connect_ring(settings.rank, list(settings.peers), listener, settings.connect_timeout, stop)
    try:
        _train_steps(settings, work, gradient, links, stop, log)
    finally:
        links.close()


def _train_steps(settings: TrainSettings, work: MatmulWork, gradient: np.ndarray, links: RingLinks, stop: Stop,
                 log: JsonLines) -> None:
    step = 0
    while not stop():
        started = time.monotonic()
        work.run()
        if stop.wait(settings.accelerator_ms / 1e3):
            break
        computed = time.monotonic()
        ring_allreduce(gradient, links, stop, settings.io_timeout)
        finished = time.monotonic()
        log.write({"workload": "train", "rank": settings.rank, "step": step, "compute_s": round(computed - started, 6),
                   "allreduce_s": round(finished - computed, 6), "step_s": round(finished - started, 6),
                   "ts": now()})
        step += 1
