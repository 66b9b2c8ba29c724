"""Properties of the whole engine on a table without units: its verdicts do not move when a column is shifted and
scaled, the same data judged at a stride of 1 s and of 0.5 s gives the same runs of flagged windows within a stride,
and a stationary table judged against another sample of the same process flags nothing."""

import numpy as np
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
