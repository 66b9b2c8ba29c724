"""The host's limit keeps its promise: on a day of independent windows the level set for five false runs a day is
crossed about five times, one long excursion counts once, a short baseline never gets a limit below what it held,
and a short baseline widens the limit by Student's t."""

import numpy as np

from stream_jobs.engine.calibration import Calibration, calibrated_limit, declustered_limit, short_baseline_widening


def test_the_limit_keeps_the_baselines_own_runs_to_the_promise():
    statistic = np.random.default_rng(6).exponential(1.0, 86400)
    limit = calibrated_limit(statistic, 1, 1, Calibration(risk=5.0, stride_s=1.0, window_s=1.0), 0.0)
    assert 5 / 2 <= np.count_nonzero(statistic >= limit) <= 5 * 2


def test_one_long_excursion_is_one_false_run_not_one_per_window():
    rng = np.random.default_rng(8)
    scattered = rng.exponential(1.0, 86400)
    clustered = np.repeat(rng.exponential(1.0, 8640), 10)
    assert declustered_limit(clustered, 5 / 86400) < declustered_limit(scattered, 5 / 86400) + 0.5


def test_a_baseline_shorter_than_the_promise_never_gets_a_limit_below_what_it_held():
    statistic = np.random.default_rng(9).exponential(1.0, 600)
    limit = calibrated_limit(statistic, 1, 1, Calibration(risk=1.0, stride_s=1.0, window_s=1.0), 0.0)
    assert limit >= statistic.max()


def test_widening_shrinks_as_the_baseline_grows():
    assert short_baseline_widening(10) > short_baseline_widening(100) > short_baseline_widening(10_000) >= 1.0
