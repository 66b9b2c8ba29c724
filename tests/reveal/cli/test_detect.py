"""`reveal detect` and `reveal compare-windows` as users run them."""

import subprocess
import sys

import numpy as np
import pandas as pd


def reveal(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reveal.cli", *args], capture_output=True, text=True,
                          timeout=180)


def recording(path, fault: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    rows = 1500
    frame = pd.DataFrame({"timestamp": 1_700_000_000 + np.arange(rows) * 0.1,
                          "gpu_util": rng.normal(80, 2, rows), "cpu_busy": rng.normal(30, 3, rows),
                          "net_rx": rng.normal(1e6, 1e4, rows), "disk_read": rng.normal(5e5, 1e4, rows)})
    if fault:
        frame.loc[900:1000, "disk_read"] += 2e5
    frame.to_csv(path, index=False)


def test_detect_finds_the_injected_burst_and_names_the_metric(tmp_path):
    recording(tmp_path / "run.csv", fault=True)
    result = reveal("detect", "--input", str(tmp_path / "run.csv"), "--output", str(tmp_path / "out.csv"))
    assert result.returncode == 0, result.stderr
    out = pd.read_csv(tmp_path / "out.csv")
    assert list(out.columns[:3]) == ["host", "window_start", "window_end"]
    assert {"score_zscore", "score_mahalanobis", "score_isolation_forest", "ranked_metrics"} <= set(out.columns)
    flagged = out[out.flagged == 1]
    starts = pd.to_datetime(flagged.window_start)
    in_fault = (starts >= pd.Timestamp(1_700_000_000 + 90 - 3, unit="s", tz="UTC")) & \
               (starts <= pd.Timestamp(1_700_000_000 + 100, unit="s", tz="UTC"))
    assert in_fault.sum() >= 8, "most windows of the 10 s burst are flagged"
    assert (~in_fault).sum() <= 3, "a clean stretch raises almost nothing"
    assert flagged[in_fault].ranked_metrics.str.startswith("disk_read").all()


def test_with_a_clean_baseline_and_paper_thresholds_side_by_side(tmp_path):
    recording(tmp_path / "clean.csv", fault=False, seed=1)
    recording(tmp_path / "run.csv", fault=True)
    calibrated = reveal("detect", "--input", str(tmp_path / "run.csv"), "--baseline", str(tmp_path / "clean.csv"),
                        "--output", str(tmp_path / "calibrated.jsonl"))
    paper = reveal("detect", "--input", str(tmp_path / "run.csv"), "--baseline", str(tmp_path / "clean.csv"),
                   "--paper-thresholds", "--output", str(tmp_path / "paper.jsonl"))
    assert calibrated.returncode == 0 and paper.returncode == 0, calibrated.stderr + paper.stderr
    compared = reveal("compare-windows", str(tmp_path / "calibrated.jsonl"), str(tmp_path / "paper.jsonl"), "--json")
    assert compared.returncode == 0 and '"iou"' in compared.stdout


def test_bad_input_names_the_column_and_row(tmp_path):
    (tmp_path / "bad.csv").write_text("timestamp,gpu_util\n1700000000,1\n1700000001,abc\n")
    result = reveal("detect", "--input", str(tmp_path / "bad.csv"))
    assert result.returncode == 2
    assert "column 'gpu_util' row 2" in result.stderr


def counter_recording(path, start: float, seed: int, burst: bool = False):
    """A gauge and a raw bytes counter (bytes since boot, ~1 MB/s), 200 s at 100 ms; with `burst` the counter's rate
    triples for 10 s at 120 s."""
    rng = np.random.default_rng(seed)
    rows = 2000
    rate = rng.normal(1e6, 5e4, rows) * np.where(burst & (np.arange(rows) >= 1200) & (np.arange(rows) < 1300), 3, 1)
    frame = pd.DataFrame({"timestamp": start + np.arange(rows) * 0.1, "cpu_busy": rng.normal(30, 3, rows),
                          "rx_bytes_total": 5e9 + np.cumsum(rate * 0.1)})
    frame.to_csv(path, index=False)


def test_a_raw_counter_column_is_judged_by_its_rate_not_its_ever_growing_level(tmp_path):
    counter_recording(tmp_path / "base.csv", 1_700_000_000, seed=1)
    counter_recording(tmp_path / "run.csv", 1_700_001_000, seed=2, burst=True)
    result = reveal("detect", "--input", str(tmp_path / "run.csv"), "--baseline", str(tmp_path / "base.csv"),
                    "--output", str(tmp_path / "out.csv"))
    assert result.returncode == 0, result.stderr
    assert "read as raw counters and judged by their rate: rx_bytes_total" in result.stderr
    out = pd.read_csv(tmp_path / "out.csv")
    start = (pd.to_datetime(out.window_start) - pd.Timestamp(1_700_001_000, unit="s", tz="UTC")).dt.total_seconds()
    in_burst = (start >= 117) & (start <= 130)
    assert out[in_burst].flagged.sum() >= 5 and out[in_burst & (out.flagged == 1)].claim.str.contains("rx_bytes").all()
    assert out[~in_burst].flagged.sum() <= 2, "the counter's later, larger level is not a departure"
