"""The `train` workload: one rank of data-parallel training, each step a compute phase then a ring allreduce of
the gradient, with the phases a real job has between steps: evaluation passes (compute, no allreduce) and
checkpoint writes (each rank writes its shard and syncs it to storage)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from reveal.lab.workloads.common import MIB, Endpoint, JsonLines, MatmulWork, Stop, now, say
from reveal.lab.workloads.ring import RingLinks, connect_ring, ring_allreduce
from reveal.lab.workloads.transport import listen


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
    matmuls: int = 0
    eval_every: int = 0
    eval_steps: int = 0
    checkpoint_every: int = 0
    checkpoint_mb: float = 16.0
    checkpoint_dir: Path | None = None


def run_train(settings: TrainSettings, stop: Stop, log: JsonLines) -> None:
    """Training steps: a compute phase (CPU matmuls, then a wait standing for accelerator kernels the host CPU does
    not see), then a ring allreduce of the gradient. No slack between steps, so a slower phase means a slower step."""
    work = (MatmulWork(settings.matrix_size, settings.matmuls, seed=settings.rank) if settings.matmuls
            else MatmulWork.calibrated(settings.matrix_size, settings.compute_ms / 1e3, seed=settings.rank))
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
        _between_steps(settings, work, step, stop, log)


def _between_steps(settings: TrainSettings, work: MatmulWork, step: int, stop: Stop, log: JsonLines) -> None:
    """The phases due after `step` steps: an evaluation pass, a checkpoint write, or both."""
    if settings.eval_every and step % settings.eval_every == 0:
        started = time.monotonic()
        for _ in range(settings.eval_steps):
            work.run()
            if stop.wait(settings.accelerator_ms / 1e3):
                return
        log.write({"workload": "train", "rank": settings.rank, "phase": "eval", "step": step,
                   "eval_s": round(time.monotonic() - started, 6), "ts": now()})
    if settings.checkpoint_every and settings.checkpoint_dir and step % settings.checkpoint_every == 0:
        started = time.monotonic()
        written = write_checkpoint(settings.checkpoint_dir / f"rank-{settings.rank}.ckpt", settings.checkpoint_mb)
        log.write({"workload": "train", "rank": settings.rank, "phase": "checkpoint", "step": step,
                   "bytes": written, "checkpoint_s": round(time.monotonic() - started, 6), "ts": now()})


def write_checkpoint(path: Path, size_mb: float) -> int:
    """Write this rank's shard of size_mb MiB and sync it to storage, replacing the previous one; the bytes
    written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    chunk = os.urandom(MIB)
    size = int(size_mb * MIB)
    partial = path.with_suffix(".partial")
    with open(partial, "wb") as file:
        for offset in range(0, size, MIB):
            file.write(chunk[:min(MIB, size - offset)])
        file.flush()
        os.fsync(file.fileno())
    partial.replace(path)
    return size
