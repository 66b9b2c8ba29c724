"""How fast `reveal detect` judges a recording, as a user would time it: a seeded table of Gaussian columns sampled
every second (a baseline and a longer part to judge) is written as CSV, and the command itself reads, learns, judges
and writes it, timed from start to exit."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

GOAL_WINDOWS_PER_S = 5000.0
FIRST_TIMESTAMP_S = 1_700_000_000


class DetectFailed(Exception):
    """`reveal detect` refused the table or failed on it; the message is its own last line."""


@dataclass(frozen=True)
class DetectSpeed:
    """One timed run: the table's shape, the windows judged and the command's wall-clock seconds."""

    channels: int
    baseline_rows: int
    judged_rows: int
    windows: int
    seconds: float

    @property
    def windows_per_second(self) -> float:
        return self.windows / self.seconds if self.seconds > 0 else float("inf")


def write_noise_table(path: Path, channels: int, rows: int, first_s: int, seed: int) -> None:
    """A CSV of `rows` seconds of `channels` standard Gaussian columns m00, m01, … from `first_s` on."""
    values = np.random.default_rng(seed).normal(size=(rows, channels))
    table = np.column_stack([first_s + np.arange(rows), values])
    header = ",".join(["timestamp"] + [f"m{i:02d}" for i in range(channels)])
    np.savetxt(path, table, delimiter=",", header=header, comments="", fmt=["%d"] + ["%.5f"] * channels)


def bench_detect(channels: int, judged_hours: float, baseline_hours: float, folder: Path,
                 seed: int = 0) -> DetectSpeed:
    """Write the tables into `folder`, run `reveal detect` on them with its defaults and time it."""
    baseline_rows, judged_rows = round(baseline_hours * 3600), round(judged_hours * 3600)
    baseline, judged, output = folder / "baseline.csv", folder / "judged.csv", folder / "windows.csv"
    write_noise_table(baseline, channels, baseline_rows, FIRST_TIMESTAMP_S, seed)
    write_noise_table(judged, channels, judged_rows, FIRST_TIMESTAMP_S + baseline_rows, seed + 1)
    command = [sys.executable, "-m", "reveal", "detect", "--input", str(judged), "--baseline", str(baseline),
               "--output", str(output)]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        told = done.stderr.strip().splitlines()
        raise DetectFailed(told[-1] if told else f"reveal detect exited with status {done.returncode}")
    with output.open() as rows:
        windows = sum(1 for _ in rows) - 1
    return DetectSpeed(channels, baseline_rows, judged_rows, windows, seconds)
