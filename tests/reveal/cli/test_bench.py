"""`reveal bench`: figure lines against their goals, and the pipeline bench's bounds on its arguments."""

import subprocess
import sys

from reveal.cli.bench import _figure_line


def test_figure_lines_say_ok_or_missed_in_the_goal_direction():
    assert _figure_line("channel_samples_per_s", 2e6, (">=", 1e6)).endswith("ok")
    assert _figure_line("channel_samples_per_s", 5e5, (">=", 1e6)).endswith("MISSED")
    assert _figure_line("memory_mb_per_host", 3.0, ("<=", 2.0)).endswith("MISSED")
    assert _figure_line("memory_mb_per_host", float("nan"), ("<=", 2.0)).endswith("MISSED")
    assert "ok" not in _figure_line("lag_end_records", 3.0, None)


def test_more_workers_than_sample_partitions_is_a_clear_error():
    result = subprocess.run([sys.executable, "-m", "reveal.cli", "bench", "pipeline", "--workers", "9"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--workers 9" in result.stderr and "1 to 6 workers" in result.stderr


def test_a_profile_without_py_spy_is_refused_before_the_run(tmp_path):
    bare_path = tmp_path / "bin"
    bare_path.mkdir()
    (bare_path / "python3").symlink_to(sys.executable)
    result = subprocess.run([sys.executable, "-m", "reveal.cli", "bench", "pipeline", "--profile",
                             str(tmp_path / "worker.collapsed")], capture_output=True, text=True, timeout=60,
                            env={"PATH": str(bare_path), "HOME": str(tmp_path)})
    assert result.returncode == 2 and "py-spy is not installed" in result.stderr
    assert "Traceback" not in result.stderr
