import doctest
import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stream_jobs.engine.thresholds as thresholds
from stream_jobs.engine.thresholds import PotThreshold, TopFractionThreshold

CLEAN_SCORES = {
    "gaussian-ish": lambda rng, count: np.abs(rng.normal(size=(count, 40))).mean(axis=1),  # a z-score detector's
    "gamma": lambda rng, count: rng.gamma(2.0, 1.0, count),
    "lognormal": lambda rng, count: rng.lognormal(0.0, 0.5, count),
    "student-t": lambda rng, count: np.abs(rng.standard_t(3, count)),
}


def baseline_and_fresh(kind, seed=2024):
    rng = np.random.default_rng(seed)
    return CLEAN_SCORES[kind](rng, 3000), CLEAN_SCORES[kind](rng, 100_000)


def test_docstring_examples_hold():
    assert doctest.testmod(thresholds).failed == 0


@pytest.mark.parametrize("kind", sorted(CLEAN_SCORES))
def test_pot_keeps_false_alarms_near_its_risk_where_the_paper_rule_flags_one_percent(kind):
    baseline, fresh = baseline_and_fresh(kind)
    calibrated = PotThreshold(risk=1e-4).fit(baseline)
    paper = TopFractionThreshold(fraction=0.01).threshold_for(fresh)
    assert np.mean(fresh > calibrated) <= 5e-4
    assert 0.009 <= np.mean(fresh > paper) <= 0.011


def test_a_fault_five_sigma_up_is_still_flagged():
    baseline, fresh = baseline_and_fresh("gaussian-ish")
    threshold = PotThreshold().fit(baseline)
    faulty = fresh[:1000] + 5 * baseline.std()
    assert np.median(baseline) + 5 * baseline.std() > threshold
    assert np.mean(faulty > threshold) > 0.6


def test_pot_is_deterministic_and_fits_a_tail_by_likelihood_on_a_large_baseline():
    baseline, _ = baseline_and_fresh("student-t")
    first, second = PotThreshold(), PotThreshold()
    assert first.fit(baseline) == second.fit(baseline)
    assert first.tail["method"] == "likelihood" and first.tail["peaks"] == 60 and first.tail["shape"] > 0


@pytest.mark.parametrize("tail", ["exponential", "heavy", "bounded", "rounded"])
def test_the_tail_fit_decides_and_extrapolates_as_scipy_s_maximum_likelihood_does(tail):
    from scipy.stats import genpareto

    rng = np.random.default_rng(7)
    for size in (10, 23, 60, 200):
        excesses = {"exponential": lambda: rng.exponential(0.3, size),
                    "heavy": lambda: genpareto.rvs(0.6, scale=2.0, size=size, random_state=rng),
                    "bounded": lambda: genpareto.rvs(-0.4, scale=1.0, size=size, random_state=rng),
                    "rounded": lambda: np.round(rng.exponential(1.0, size), 1) + 0.05}[tail]()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            shape, _, scale = genpareto.fit(excesses, floc=0.0)
        exponential = -size * (np.log(excesses.mean()) + 1.0)
        heavy = shape > 0 and 2 * (genpareto.logpdf(excesses, shape, 0.0, scale).sum() - exponential) > 3.841
        fitted_shape, fitted_scale, method = thresholds.fit_tail(excesses)
        assert (method == "likelihood") == heavy, f"{tail} tail of {size}: scipy says heavy={heavy}, fit {method}"
        if heavy:
            expected = thresholds.excess_quantile(shape, scale, 1e-4)
            assert thresholds.excess_quantile(fitted_shape, fitted_scale, 1e-4) == pytest.approx(expected, rel=1e-3)
        else:
            assert (fitted_shape, fitted_scale) == (0.0, pytest.approx(excesses.mean()))


def test_the_tail_fit_reaches_the_likelihood_maximum_over_heavy_tails():
    excesses = np.concatenate([np.linspace(0.01, 1.0, 40), [60.0, 80.0]])
    shape, scale, method = thresholds.fit_tail(excesses)
    from scipy.stats import genpareto

    grid = [(s, c) for s in np.linspace(0.05, 4.0, 80) for c in np.geomspace(0.01, 10.0, 80)]
    best = max(genpareto.logpdf(excesses, s, 0.0, c).sum() for s, c in grid)
    assert method == "likelihood" and genpareto.logpdf(excesses, shape, 0.0, scale).sum() >= best - 1e-6


def test_a_light_tail_is_extrapolated_as_exponential_not_as_bounded():
    baseline, _ = baseline_and_fresh("gaussian-ish")
    pot = PotThreshold()
    pot.fit(baseline)
    assert pot.tail["method"] == "exponential" and pot.tail["shape"] == 0.0


def test_a_small_baseline_lowers_its_initial_threshold_to_leave_ten_peaks():
    baseline = np.random.default_rng(3).gamma(2.0, 1.0, 60)
    pot = PotThreshold()
    threshold = pot.fit(baseline)
    assert pot.tail["peaks"] == 10 and pot.tail["initial"] < np.quantile(baseline, 0.98)
    assert threshold > baseline.max()


def test_a_small_baseline_keeps_its_false_alarms_far_below_the_paper_rule():
    rng = np.random.default_rng(8)
    false_alarms = [np.mean(CLEAN_SCORES["gaussian-ish"](rng, 20_000) > PotThreshold().fit(
        CLEAN_SCORES["gaussian-ish"](rng, 60))) for _ in range(10)]
    assert np.mean(false_alarms) < 1e-3


def test_fewer_than_ten_peaks_are_fitted_by_moments():
    pot = PotThreshold()
    pot.fit(np.random.default_rng(3).gamma(2.0, 1.0, 20))
    assert pot.tail["peaks"] == 6 and pot.tail["method"] in ("moments", "exponential")


@pytest.mark.parametrize("count", [1, 2, 5])
def test_a_tiny_baseline_falls_back_to_its_maximum(count):
    baseline = np.random.default_rng(4).normal(10.0, 1.0, count)
    pot = PotThreshold()
    assert pot.fit(baseline) == baseline.max() and pot.tail["method"] == "none"


def test_a_runaway_tail_is_held_within_twice_the_maximums_distance_from_the_median():
    baseline = np.abs(np.random.default_rng(9).standard_cauchy(60))
    threshold = PotThreshold().fit(baseline)
    highest, middle = baseline.max(), np.median(baseline)
    assert highest <= threshold <= highest + 2 * (highest - middle)


def test_identical_scores_give_their_value_and_nan_scores_are_ignored():
    assert PotThreshold().fit(np.full(500, 2.5)) == 2.5
    assert PotThreshold().fit(np.array([1.0, np.nan, 3.0])) == 3.0
    with pytest.raises(ValueError, match="finite"):
        PotThreshold().fit(np.array([np.nan]))


def test_pot_state_round_trip():
    baseline, _ = baseline_and_fresh("gamma")
    pot = PotThreshold(risk=1e-3)
    pot.fit(baseline)
    restored = PotThreshold.from_state(json.loads(json.dumps(pot.state(), allow_nan=False)))
    assert restored.threshold == pot.threshold and restored.risk == 1e-3 and restored.tail == pot.tail
    assert not PotThreshold.from_state(PotThreshold().state()).fitted


def test_invalid_settings_are_refused():
    with pytest.raises(ValueError):
        PotThreshold(risk=0.0)
    with pytest.raises(ValueError):
        TopFractionThreshold(fraction=1.0)


def test_streaming_top_fraction_flags_about_one_percent_of_a_clean_run():
    baseline, fresh = baseline_and_fresh("gamma")
    rule = TopFractionThreshold()
    rule.fit(baseline)
    flagged = [score > rule.update(score) for score in fresh[:20_000]]
    assert 0.008 <= np.mean(flagged) <= 0.012


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=80), st.integers(1, 30),
       st.sampled_from([0.01, 0.1, 0.5]))
def test_streaming_threshold_is_the_quantile_of_the_last_capacity_scores(scores, capacity, fraction):
    rule = TopFractionThreshold(fraction=fraction, capacity=capacity)
    for index, score in enumerate(scores):
        threshold = rule.update(score)
        recent = np.array(scores[max(0, index + 1 - capacity):index + 1])
        assert threshold == pytest.approx(np.quantile(recent, 1 - fraction), rel=1e-12, abs=1e-9)


def test_top_fraction_fit_keeps_only_the_last_capacity_and_ignores_nan():
    rule = TopFractionThreshold(fraction=0.5, capacity=3)
    assert rule.threshold == np.inf and not rule.fitted
    assert rule.fit(np.array([100.0, 1.0, 2.0, 3.0])) == 2.0
    assert rule.update(np.nan) == 2.0


def test_top_fraction_state_round_trip_continues_the_same_stream():
    rule = TopFractionThreshold(capacity=500)
    rule.fit(np.random.default_rng(5).normal(size=800))
    restored = TopFractionThreshold.from_state(json.loads(json.dumps(rule.state(), allow_nan=False)))
    for score in np.random.default_rng(6).normal(size=200):
        assert restored.update(score) == rule.update(score)
