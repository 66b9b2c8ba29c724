"""`reveal bench pipeline` replays a small fleet through the real broker and a real worker and prints its figures."""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def test_bench_pipeline_prints_positive_figures(kafka_bootstrap):
    result = subprocess.run([sys.executable, "-m", "reveal.cli", "--log-level", "WARNING", "bench", "pipeline",
                             "--hosts", "2", "--channels", "20", "--duration", "30", "--bootstrap", kafka_bootstrap],
                            capture_output=True, text=True, timeout=150)
    assert result.returncode == 0, result.stderr[-3000:]
    figures = {line.split()[0]: float(line.split()[1]) for line in result.stdout.splitlines()
               if line.split() and line.split()[0].endswith(("_s", "_per_s", "_core", "_host", "_sample", "_mb"))}
    for figure in ("channel_samples_per_s", "anomaly_latency_p50_s", "anomaly_latency_p99_s",
                   "worker_cpu_percent_of_core", "kafka_bytes_per_channel_sample",
                   "clickhouse_bytes_per_channel_sample"):
        assert figures[figure] > 0, result.stdout
    assert figures["channel_samples_per_s"] == pytest.approx(2 * 20 * 10, rel=0.2), result.stdout
    assert figures["storage_delay_end_s"] < 3.0, result.stdout
    assert figures["embedded_clickhouse_median_mb"] > 0, "the workers' /metrics were read: " + result.stdout
    assert "keeps up:" in result.stdout, result.stdout
    assert "memory per host is measured short of its steady state" in result.stdout, result.stdout
