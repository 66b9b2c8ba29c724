"""Offline detection through the live engine: one row per host-window with every detector's score, a step judged
against a clean baseline flagged and named, a raw counter judged by its rate, and a baseline that cannot serve refused
by name."""

import math

import numpy as np
import pytest

from stream_jobs.engine.attribution import Contribution
from stream_jobs.engine.settings import EngineSettings
from stream_jobs.engine.verdicts import WindowVerdict
from stream_jobs.offline.host_tables import RecordedTable, empty_repairs, gauge_channels, repaired_host
from stream_jobs.offline.runner import DETECTORS, count_windows, detect, judge_host, output_row
from stream_jobs.offline.tables import TableError

T0_S = 1_700_000_000
SETTINGS = EngineSettings(warmup_s=10)
COLUMNS = ("gpu_util", "cpu_busy", "disk_read")


def host_table(host: str = "h", seconds: int = 120, seed: int = 0, step_at_s: int | None = None,
               columns=COLUMNS):
    """A host's rows, ten a second from T0_S: three noisy gauges; disk_read steps up by 20σ from `step_at_s` on."""
    rng = np.random.default_rng(seed)
    rows = seconds * 10
    values = np.column_stack([rng.normal(80, 2, rows), rng.normal(30, 3, rows), rng.normal(5e5, 1e4, rows)])
    if step_at_s is not None:
        values[step_at_s * 10:, 2] += 2e5
    timestamps = T0_S * 10**9 + np.arange(rows, dtype=np.int64) * 100_000_000
    return repaired_host(host, "offline", gauge_channels(list(columns)), timestamps, values[:, :len(columns)],
                         empty_repairs())


def recorded(*hosts) -> RecordedTable:
    return RecordedTable("input.csv", {table.host: table for table in hosts}, {})


def test_windows_are_counted_as_the_engine_cuts_them():
    assert count_windows(host_table(seconds=60), SETTINGS) == 57, "3 s windows every second, the first full one on"


def test_a_step_judged_against_a_clean_baseline_is_flagged_and_named_in_one_row_per_window():
    run = recorded(host_table(seed=0, step_at_s=90))
    rows = detect(run, SETTINGS, baseline=recorded(host_table(seed=1)))
    assert len(rows) == count_windows(run.hosts["h"], SETTINGS)
    assert [row["window_start"] for row in rows] == sorted(row["window_start"] for row in rows)
    assert {f"score_{name}" for name in DETECTORS} | {"flagged", "claim", "ranked_metrics"} <= set(rows[0])
    after = [row for row in rows if row["window_start"] >= (T0_S + 90) * 10**9]
    before = [row for row in rows if row["window_end"] <= (T0_S + 90) * 10**9]
    assert sum(row["flagged"] for row in after) >= 0.9 * len(after)
    assert all(row["ranked_metrics"][0] == "disk_read" for row in after if row["flagged"])
    assert sum(row["flagged"] for row in before) <= 2


def test_a_column_that_only_rises_is_judged_by_its_rate_and_the_run_says_so():
    table = host_table(columns=("bytes_sent", "cpu_busy", "disk_read"))
    table.values[:, 0] = np.cumsum(np.random.default_rng(3).poisson(100, len(table.values)))
    said = []
    detect(recorded(table), SETTINGS, progress=said.append)
    assert said[0] == "1 columns only rise, read as raw counters and judged by their rate: bytes_sent"
    assert said[1] == "h: 1200 rows, 3 metrics"


def test_a_baseline_too_short_without_the_inputs_columns_or_without_its_host_is_refused():
    with pytest.raises(TableError, match="h: the baseline makes 9 windows of 3 s; at least 10 are needed"):
        judge_host(host_table(), host_table(seconds=12), SETTINGS)
    with pytest.raises(TableError, match=r"the baseline lacks columns of the input, e.g. \['disk_read'\]"):
        judge_host(host_table(), host_table(columns=COLUMNS[:2]), SETTINGS)
    with pytest.raises(TableError, match=r"the baseline has no rows for host 'h' \(it has \['other'\]\)"):
        detect(recorded(host_table()), SETTINGS, baseline=recorded(host_table("other")))


def test_an_output_row_has_a_score_for_every_detector_and_its_channels_once_each_most_first():
    evidence = (Contribution("disk_read", "mean", 7e5, 5e5, 1e4, 20.0),
                Contribution("disk_read", "max", 8e5, 5e5, 1e4, 30.0),
                Contribution("cpu_busy", "std", 9.0, 3.0, 1.0, 6.0))
    verdict = WindowVerdict(5, 10, 20, 30, True, 3.0, 1.0, True, ("zscore",), "storage", "disk_read rose", evidence,
                            detector_scores={"zscore": 3.0})
    row = output_row("h", verdict)
    assert (row["host"], row["window_start"], row["window_end"], row["flagged"]) == ("h", 10, 20, 1)
    assert row["score_zscore"] == 3.0 and math.isnan(row["score_mahalanobis"])
    assert row["detectors"] == ["zscore"] and row["ranked_metrics"] == ["disk_read", "cpu_busy"]
