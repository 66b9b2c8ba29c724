"""The per-column model of normal: null data of many shapes raises no more false runs than promised, verdicts do not
move under x → a·x + b, a short baseline widens the limit, a 6σ step on one of 700 columns is found and named first,
floors in a channel's units apply on top, and durations are seconds at any stride."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from stream_jobs.engine.calibration import Calibration, short_baseline_widening
from stream_jobs.engine.channel_watch import ChannelBands, ChannelWatch, WatchSettings, WatchTiming

STRIDE_S = 10.0
WINDOWS_PER_DAY = int(86400 / STRIDE_S)


def null_process(kind: str, rng: np.random.Generator, windows: int, columns: int) -> np.ndarray:
    """Window statistics of a stationary process (windows × columns): the same process for baseline and judged."""
    if kind == "gaussian-0":
        return rng.normal(0.0, 1.0, (windows, columns))
    if kind == "gaussian-minus-50":
        return rng.normal(-50.0, 3.0, (windows, columns))
    if kind == "gaussian-1e6":
        return rng.normal(1e6, 1.0, (windows, columns))
    if kind == "poisson":
        return rng.poisson(3.0, (windows, columns)).astype(float)
    if kind == "periodic":
        phase = (np.arange(windows)[:, None] // 3 + np.arange(columns)) % 2
        return 10.0 * phase + rng.normal(0.0, 0.5, (windows, columns))
    if kind == "heavy-tailed":
        return rng.standard_t(3, (windows, columns))
    if kind == "ar1":
        return autoregressive(rng, windows, columns, 0.95)
    raise ValueError(kind)


def autoregressive(rng: np.random.Generator, windows: int, columns: int, phi: float) -> np.ndarray:
    """An AR(1) process of unit variance: each window φ times the last plus new noise."""
    noise = rng.normal(0.0, np.sqrt(1.0 - phi * phi), (windows, columns))
    values = np.empty((windows, columns))
    values[0] = rng.normal(0.0, 1.0, columns)
    for row in range(1, windows):
        values[row] = phi * values[row - 1] + noise[row]
    return values


def fitted(baseline: np.ndarray, risk: float, floor: float = 0.0, stride_s: float = STRIDE_S) -> ChannelWatch:
    watch = ChannelWatch(np.full(baseline.shape[1], floor), WatchSettings(),
                         calibration=Calibration(risk, stride_s, stride_s))
    return watch.fit(baseline)


def runs_of(flags: list[bool]) -> int:
    """Runs of consecutive flagged windows."""
    return sum(1 for i, flag in enumerate(flags) if flag and (i == 0 or not flags[i - 1]))


@settings(max_examples=12, deadline=None, derandomize=True)
@given(kind=st.sampled_from(["gaussian-0", "gaussian-minus-50", "gaussian-1e6", "poisson", "periodic",
                             "heavy-tailed", "ar1"]), seed=st.integers(0, 2**16))
def test_null_data_raises_at_most_twice_the_promised_runs_a_day_and_nothing_in_ten_hours_when_quiet(kind, seed):
    rng = np.random.default_rng(seed)
    baseline = null_process(kind, rng, 7 * WINDOWS_PER_DAY, 20)
    judged = null_process(kind, rng, 4 * WINDOWS_PER_DAY, 20)
    watch = fitted(baseline, risk=2.0)
    flags = [watch.judge(row).flagged for row in judged]
    assert runs_of(flags) / 4 <= 2 * 2.0, f"{kind}: {runs_of(flags)} runs in 4 days, promised 2 a day"
    quiet = fitted(baseline, risk=0.02)
    ten_hours = judged[:int(10 * 3600 / STRIDE_S)]
    assert not any(quiet.judge(row).flagged for row in ten_hours), f"{kind}: a run in 10 host-hours at 0.02 a day"


@settings(max_examples=10, deadline=None, derandomize=True)
@given(scale=st.floats(1e-3, 1e3), shift=st.floats(-1e6, 1e6), seed=st.integers(0, 2**16))
def test_verdicts_of_unitless_columns_do_not_move_under_an_affine_change(scale, shift, seed):
    rng = np.random.default_rng(seed)
    baseline = rng.normal(5.0, 2.0, (2000, 8))
    judged = rng.normal(5.0, 2.0, (300, 8))
    judged[100:140, 3] += 12.0
    plain = fitted(baseline, risk=1.0)
    moved = fitted(scale * baseline + shift, risk=1.0)
    for row in judged:
        a, b = plain.judge(row), moved.judge(scale * row + shift)
        assert np.array_equal(a.persisted, b.persisted)
        np.testing.assert_allclose(a.departure, b.departure, rtol=1e-6, atol=1e-6)


@settings(max_examples=20, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**16))
def test_a_6_sigma_step_held_20_s_on_one_of_700_columns_is_found_and_named_first(seed):
    rng = np.random.default_rng(seed)
    baseline = rng.normal(0.0, 1.0, (3600, 700))
    watch = fitted(baseline, risk=1.0, stride_s=1.0)
    column = int(rng.integers(700))
    found = []
    for second in range(40):
        row = rng.normal(0.0, 1.0, 700)
        if 10 <= second < 30:
            row[column] += 6.0
        verdict = watch.judge(row)
        if verdict.flagged:
            found.append(int(np.argmax(np.where(verdict.persisted, np.abs(verdict.departure), -1))))
    assert found and found[0] == column and set(found) == {column}


def test_the_step_is_found_in_at_least_95_percent_of_draws():
    hits = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        watch = fitted(rng.normal(0.0, 1.0, (3600, 700)), risk=1.0, stride_s=1.0)
        column = int(rng.integers(700))
        steps = rng.normal(0.0, 1.0, (20, 700))
        steps[:, column] += 6.0
        hits += any(watch.judge(row).persisted[column] for row in steps)
    assert hits >= 38


def test_a_short_baseline_gets_a_limit_beyond_all_it_held():
    rng = np.random.default_rng(1)
    baseline = rng.normal(0.0, 1.0, (30, 20))
    short_watch = fitted(baseline, risk=1.0, stride_s=1.0)
    assert short_watch.limit > np.abs(short_watch.bands.z(baseline)).max()
    assert short_baseline_widening(10) > short_baseline_widening(100) > short_baseline_widening(10_000) >= 1.0


def test_many_columns_get_a_wider_limit_than_one():
    rng = np.random.default_rng(2)
    one = fitted(rng.normal(0.0, 1.0, (20_000, 1)), risk=1.0, stride_s=1.0)
    many = fitted(rng.normal(0.0, 1.0, (20_000, 700)), risk=1.0, stride_s=1.0)
    assert many.limit > one.limit + 0.5


def test_a_floor_in_the_channels_units_holds_back_a_change_its_noise_alone_would_flag():
    rng = np.random.default_rng(3)
    baseline = rng.normal(100.0, 0.01, (2000, 2))
    watch = ChannelWatch(np.array([0.0, 5.0]), calibration=Calibration(1.0, 1.0, 1.0)).fit(baseline)
    verdicts = [watch.judge(np.array([101.0, 101.0])) for _ in range(6)]
    assert verdicts[-1].persisted.tolist() == [True, False]


def test_a_spread_that_falls_is_not_a_departure():
    rng = np.random.default_rng(4)
    watch = ChannelWatch(np.zeros(1), rising_only=np.array([True]),
                         calibration=Calibration(1.0, 1.0, 1.0)).fit(rng.normal(10.0, 1.0, (2000, 1)))
    assert not any(watch.judge(np.array([0.0])).flagged for _ in range(10))
    assert any(watch.judge(np.array([30.0])).flagged for _ in range(10))


def test_a_column_whose_guard_departs_does_not_depart_with_it_but_does_on_its_own():
    rng = np.random.default_rng(5)
    watch = ChannelWatch(np.zeros(2), guards=np.array([[-1], [0]]),
                         calibration=Calibration(1.0, 1.0, 1.0)).fit(rng.normal(10.0, 1.0, (2000, 2)))
    both = [watch.judge(np.array([40.0, 40.0])) for _ in range(6)]
    assert both[-1].persisted.tolist() == [True, False]
    alone = [watch.judge(np.array([10.0, 40.0])) for _ in range(6)]
    assert alone[-1].persisted.tolist() == [False, True]


@pytest.mark.parametrize("stride_s", [0.5, 1.0, 2.0, 300.0])
def test_durations_are_seconds_at_any_stride(stride_s):
    timing = WatchTiming.of(WatchSettings(persist_s=4.0, adopt_after_s=600.0), stride_s)
    assert timing.persist * stride_s == pytest.approx(max(4.0, stride_s), abs=stride_s)
    assert timing.adopt_after * stride_s == pytest.approx(600.0, abs=stride_s) or stride_s * 2 > 600.0


def test_a_level_held_past_the_adoption_time_becomes_normal():
    rng = np.random.default_rng(5)
    watch = ChannelWatch(np.zeros(2), WatchSettings(adopt_after_s=60.0),
                         calibration=Calibration(1.0, 1.0, 1.0)).fit(rng.normal(0.0, 1.0, (2000, 2)))
    flags = [watch.judge(np.array([20.0, 0.0]) + rng.normal(0.0, 1.0, 2)).flagged for _ in range(120)]
    assert flags[10] and not flags[-1]


def test_a_model_survives_its_json():
    rng = np.random.default_rng(7)
    watch = fitted(rng.normal(0.0, 1.0, (500, 3)), risk=1.0)
    again = ChannelBands.from_json(watch.bands.to_json())
    row = np.array([0.5, 9.0, -9.0])
    np.testing.assert_array_equal(again.departure(row), watch.bands.departure(row))
