"""`reveal bench agent` runs against the real broker and prints every figure with its goal."""

import subprocess
import sys

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.quiet_host]


def test_bench_agent_prints_its_figures(kafka_bootstrap):
    result = subprocess.run([sys.executable, "-m", "reveal.cli", "--log-level", "WARNING", "bench", "agent",
                             "--duration", "3", "--warmup", "2", "--bootstrap", kafka_bootstrap],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    for figure in ("cpu_percent_of_core", "cpu_us_per_channel_sample", "jitter_p99_ms",
                   "wire_bytes_per_channel_sample", "rest_bytes_per_channel_sample", "process_rss_mib",
                   "process_cpu_percent_of_core", "kernel_floor_us_per_channel_sample"):
        line = next(l for l in result.stdout.splitlines() if l.startswith(figure))
        assert float(line.split()[1]) > 0, line
