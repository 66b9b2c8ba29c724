"""The `input` workload: an input pipeline that reads batches of files from storage, past the page cache, then
runs a small compute on them."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from reveal.lab.workloads.common import MIB, JsonLines, MatmulWork, Stop, now, say


@dataclass(frozen=True)
class InputSettings:
    data_dir: Path
    files: int = 32
    file_mb: float = 4.0
    batch_files: int = 4
    compute_ms: float = 100.0
    matrix_size: int = 256
    step_ms: float = 1000.0
    epoch_pause_s: float = 0.0
    seed: int = 0


def ensure_files(data_dir: Path, count: int, size_bytes: int) -> list[Path]:
    """The data set's files, created once: a file of the right size is kept, so restarts reuse it."""
    data_dir.mkdir(parents=True, exist_ok=True)
    paths = [data_dir / f"shard-{index:05d}.bin" for index in range(count)]
    for index, path in enumerate(paths):
        if not (path.exists() and path.stat().st_size == size_bytes):
            _write_shard(path, size_bytes, seed=index)
    return paths


def _write_shard(path: Path, size_bytes: int, seed: int) -> None:
    """Write random bytes beside `path`, flush them to storage and out of the page cache, then rename into place, so
    a half-written file never passes for a shard."""
    rng = np.random.default_rng(seed)
    partial = path.with_suffix(".partial")
    with open(partial, "wb") as file:
        for offset in range(0, size_bytes, MIB):
            file.write(rng.bytes(min(MIB, size_bytes - offset)))
        file.flush()
        os.fsync(file.fileno())
        _drop_from_page_cache(file.fileno())
    partial.rename(path)


def _drop_from_page_cache(fd: int) -> None:
    # posix_fadvise is missing on macOS; there the reads may be served from the page cache.
    if hasattr(os, "posix_fadvise"):
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def read_uncached(path: Path, buffer: memoryview) -> int:
    """Read `path` into `buffer` with plain reads, then drop it from the page cache so the next read of it goes to
    storage again. Returns the bytes read."""
    total = 0
    with open(path, "rb", buffering=0) as file:
        while total < len(buffer) and (count := file.readinto(buffer[total:])):
            total += count
        _drop_from_page_cache(file.fileno())
    return total


def epoch_order(files: int, epoch: int, seed: int) -> list[int]:
    """The order files are read in during one epoch: a fresh shuffle per epoch, the same for the same seed."""
    return [int(i) for i in np.random.default_rng([seed, epoch]).permutation(files)]


def run_input(settings: InputSettings, stop: Stop, log: JsonLines) -> None:
    """Steps of reading a batch of files then a small compute on it, one every `step_ms` at most; each pass over
    the data set (an epoch) reads it in a new shuffled order, after a pause of `epoch_pause_s`."""
    size_bytes = int(settings.file_mb * MIB)
    paths = ensure_files(settings.data_dir, settings.files, size_bytes)
    work = MatmulWork.calibrated(settings.matrix_size, settings.compute_ms / 1e3)
    buffer = memoryview(bytearray(size_bytes))
    say(f"input: {len(paths)} files of {size_bytes} bytes in {settings.data_dir}, {work.repeats} matmuls per step")
    steps_per_epoch = max(1, len(paths) // settings.batch_files)
    step, order = 0, []
    while not stop():
        epoch, position = divmod(step, steps_per_epoch)
        if position == 0:
            if epoch and stop.wait(settings.epoch_pause_s):
                break
            order = epoch_order(len(paths), epoch, settings.seed)
        started = time.monotonic()
        batch = [paths[order[(position * settings.batch_files + i) % len(paths)]] for i in range(settings.batch_files)]
        read_bytes = sum(read_uncached(path, buffer) for path in batch)
        read = time.monotonic()
        work.run()
        finished = time.monotonic()
        log.write({"workload": "input", "step": step, "epoch": epoch, "files": len(batch), "bytes": read_bytes,
                   "read_s": round(read - started, 6), "compute_s": round(finished - read, 6),
                   "step_s": round(finished - started, 6), "ts": now()})
        step += 1
        stop.wait(settings.step_ms / 1e3 - (finished - started))
