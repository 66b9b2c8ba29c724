"""`reveal bench detect` times the real command on a table it writes: every second of the judged part past the first
window is one window judged, the figures it prints follow from the run, and a table the command refuses is told in
one line."""

from __future__ import annotations

import csv
import subprocess
import sys

import numpy as np

from reveal.bench.detect_speed import bench_detect, write_noise_table


def test_a_noise_table_holds_seconds_of_gaussian_columns(tmp_path):
    path = tmp_path / "t.csv"
    write_noise_table(path, channels=3, rows=500, first_s=100, seed=1)
    rows = list(csv.reader(path.open()))
    assert rows[0] == ["timestamp", "m00", "m01", "m02"] and len(rows) == 501
    values = np.array(rows[1:], dtype=float)
    assert values[:, 0].tolist() == list(range(100, 600))
    assert abs(values[:, 1:].mean()) < 0.2 and 0.8 < values[:, 1:].std() < 1.2


def test_the_command_is_timed_on_every_window_it_judges(tmp_path):
    speed = bench_detect(channels=3, judged_hours=0.25, baseline_hours=0.1, folder=tmp_path)
    assert speed.judged_rows == 900 and speed.baseline_rows == 360
    assert 890 <= speed.windows <= 900  # 3 s windows every second over 900 s of rows
    assert speed.seconds > 0 and speed.windows_per_second == speed.windows / speed.seconds
    assert (tmp_path / "windows.csv").exists()


def test_the_bench_prints_its_figures_against_the_goal():
    done = subprocess.run([sys.executable, "-m", "reveal", "bench", "detect", "--channels", "2", "--hours", "0.1",
                           "--baseline-hours", "0.05"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines() if line.strip()}
    assert 350 <= int(lines["windows"][0]) <= 360
    assert "goal" in lines["windows_per_second"] and lines["windows_per_second"][-1] in ("ok", "MISSED")


def test_a_baseline_too_short_to_learn_from_is_told_in_one_line():
    done = subprocess.run([sys.executable, "-m", "reveal", "bench", "detect", "--hours", "0.01",
                           "--baseline-hours", "0.001"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "reveal bench: the table it wrote was refused: reveal detect: input: the baseline makes 1 windows of 3 s; "
        "at least 10 are needed"]
