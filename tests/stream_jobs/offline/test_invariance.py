"""Properties of the whole engine on a table without units: its verdicts, in either mode, do not move when a column is
shifted and scaled (nor do the other columns' when a near-constant one is), the same data judged at a stride of 1 s
and of 0.5 s gives the same runs of flagged windows within a stride, and a stationary table judged against another
sample of the same process flags nothing."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from stream_jobs.engine.settings import EngineSettings
from stream_jobs.offline.host_tables import empty_repairs, gauge_channels, repaired_host
from stream_jobs.offline.runner import judge_host

T0_NS = 1_700_000_000 * 10**9
COLUMNS = ("load", "temp", "queue", "rate")


def table(seed: int, seconds: int, step_at_s: int | None = None, scale=None, shift=None):
    """Four noisy gauges at 10 Hz; `queue` steps up by 10 of its noise from `step_at_s` for 30 s."""
    rng = np.random.default_rng(seed)
    rows = seconds * 10
    values = rng.normal([0.0, 60.0, -5.0, 1e6], [1.0, 0.5, 2.0, 1e3], (rows, len(COLUMNS)))
    if step_at_s is not None:
        values[step_at_s * 10:(step_at_s + 30) * 10, 2] += 20.0
    if scale is not None:
        values = values * scale + shift
    timestamps = T0_NS + np.arange(rows, dtype=np.int64) * 100_000_000
    return repaired_host("h", "c", gauge_channels(list(COLUMNS)), timestamps, values, empty_repairs())


def flagged_runs(verdicts) -> list[tuple[float, float]]:
    """(first end, last end) in seconds of each run of consecutive flagged windows."""
    runs, previous = [], False
    for verdict in verdicts:
        end = (verdict.end_ns - T0_NS) / 1e9
        if verdict.anomalous and previous:
            runs[-1] = (runs[-1][0], end)
        elif verdict.anomalous:
            runs.append((end, end))
        previous = verdict.anomalous
    return runs


@settings(max_examples=4, deadline=None, derandomize=True)
@given(scale=st.lists(st.floats(1e-3, 1e3), min_size=4, max_size=4),
       shift=st.lists(st.floats(-1e5, 1e5), min_size=4, max_size=4))
def test_verdicts_do_not_move_when_columns_are_shifted_and_scaled(scale, shift):
    settings_ = EngineSettings()
    scale, shift = np.asarray(scale), np.asarray(shift)
    _, plain = judge_host(table(1, 240, step_at_s=150), table(2, 600), settings_)
    _, moved = judge_host(table(1, 240, step_at_s=150, scale=scale, shift=shift),
                          table(2, 600, scale=scale, shift=shift), settings_)
    assert [v.anomalous for v in plain] == [v.anomalous for v in moved]
    assert any(v.anomalous for v in plain), "the step is found"


def test_the_same_data_at_half_the_stride_gives_the_same_runs_within_a_stride():
    runs = {}
    for stride in (1.0, 0.5):
        _, verdicts = judge_host(table(3, 240, step_at_s=150), table(4, 600), EngineSettings(stride_s=stride))
        runs[stride] = flagged_runs(verdicts)
    assert len(runs[1.0]) == len(runs[0.5]) >= 1
    for (start_1, end_1), (start_half, end_half) in zip(runs[1.0], runs[0.5]):
        assert abs(start_1 - start_half) <= 1.0 and abs(end_1 - end_half) <= 1.0


def test_a_stationary_table_judged_against_another_sample_of_it_flags_nothing():
    _, verdicts = judge_host(table(5, 900), table(6, 900), EngineSettings())
    assert len(verdicts) > 800 and not any(v.anomalous for v in verdicts)


def wide_table(seed: int, seconds: int, step_at_s: int | None = None, moved: int | None = None):
    """Twenty unit-normal gauges at 10 Hz; channel 3 steps up by 6 σ from `step_at_s` for 60 s; channel `moved` is
    scaled by 1,000 and shifted by 1e6."""
    values = np.random.default_rng(seed).normal(size=(seconds * 10, 20))
    if step_at_s is not None:
        values[step_at_s * 10:(step_at_s + 60) * 10, 3] += 6.0
    if moved is not None:
        values[:, moved] = 1_000.0 * values[:, moved] + 1e6
    return host_table([f"c{i:02d}" for i in range(20)], values)


def host_table(names: list[str], values: np.ndarray):
    timestamps = T0_NS + np.arange(len(values), dtype=np.int64) * 100_000_000
    return repaired_host("h", "c", gauge_channels(names), timestamps, values, empty_repairs())


@pytest.mark.parametrize("mode", ["calibrated", "paper"])
@pytest.mark.parametrize("moved", [3, 11])
def test_flags_do_not_move_when_one_of_twenty_columns_is_scaled_by_1000_and_shifted_by_1e6(mode, moved):
    settings_ = EngineSettings(mode=mode)
    _, plain = judge_host(wide_table(1, 300, step_at_s=150), wide_table(2, 600), settings_)
    _, scaled = judge_host(wide_table(1, 300, step_at_s=150, moved=moved), wide_table(2, 600, moved=moved), settings_)
    assert [v.anomalous for v in plain] == [v.anomalous for v in scaled]
    assert sum(v.anomalous for v in plain) >= 30, "the step is found"


def hundredths_table(seed: int, seconds: int, fault_at_s: int | None = None, scaled: bool = False):
    """Twelve gauges written to two decimals, as min-max scaled data is: noisy ones around 0.40, and m02 near-constant
    at 0.50 (0.51 in 0.3 % of samples); m05–m08 rise by 0.03 from `fault_at_s` for 40 s. `scaled`: m02 as
    1,000 m02 + 1e6 (whole numbers)."""
    rng = np.random.default_rng(seed)
    hundredths = np.round(rng.normal(40.0, 3.0, (seconds * 10, 12)))
    hundredths[:, 1] = 50 + (rng.random(seconds * 10) < 0.003)
    if fault_at_s is not None:
        hundredths[fault_at_s * 10:(fault_at_s + 40) * 10, 4:8] += 3
    values = hundredths / 100
    if scaled:
        values[:, 1] = 10 * hundredths[:, 1] + 1e6
    return host_table([f"m{i:02d}" for i in range(1, 13)], values)


@pytest.mark.parametrize("mode", ["calibrated", "paper"])
def test_scaling_a_near_constant_column_moves_no_other_columns_verdict(mode):
    settings_ = EngineSettings(mode=mode)
    verdicts = [judge_host(hundredths_table(1, 400, fault_at_s=200, scaled=scaled),
                           hundredths_table(2, 900, scaled=scaled), settings_)[1] for scaled in (False, True)]
    plain, moved = ([(v.anomalous, [c for c in v.ranked_channels if c != "m02"]) for v in run] for run in verdicts)
    assert plain == moved
    assert sum(flagged for flagged, _ in plain) >= 10, "the fault is found"
