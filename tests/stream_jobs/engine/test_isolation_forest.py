import json

import numpy as np
import pytest
from sklearn.ensemble import IsolationForest

from stream_jobs.engine.detectors.isolation_forest import IsolationForestDetector


def gaussian(seed, count=400, features=9):
    return np.random.default_rng(seed).normal(40.0, 3.0, size=(count, features))


@pytest.mark.parametrize("count, features, max_samples", [(700, 9, "auto"), (120, 30, "auto"), (500, 6, 0.5),
                                                          (1, 4, "auto")])
def test_scores_equal_scikit_learns_negated_score_samples(count, features, max_samples):
    baseline, probe = gaussian(0, count, features), 1.5 * gaussian(1, 200, features) - 20.0
    detector = IsolationForestDetector(seed=3, max_samples=max_samples).fit(baseline)
    reference = IsolationForest(random_state=3, max_samples=max_samples).fit(baseline)
    np.testing.assert_array_equal(detector.score(probe), -reference.score_samples(probe))


def test_missing_values_are_imputed_with_the_baseline_mean():
    baseline = gaussian(0)
    baseline[::3, 2] = np.nan
    detector = IsolationForestDetector().fit(baseline)
    probe = gaussian(1, count=5)
    at_mean = probe.copy()
    probe[:, 2] = np.nan
    at_mean[:, 2] = np.nanmean(baseline[:, 2])
    np.testing.assert_array_equal(detector.score(probe), detector.score(at_mean))


def test_seed_decides_the_forest():
    probe = gaussian(1)
    first = IsolationForestDetector(seed=1).fit(gaussian(0)).score(probe)
    assert not np.array_equal(first, IsolationForestDetector(seed=2).fit(gaussian(0)).score(probe))
    np.testing.assert_array_equal(first, IsolationForestDetector(seed=1).fit(gaussian(0)).score(probe))


def test_isolated_windows_score_near_one_and_typical_ones_near_or_below_a_half():
    detector = IsolationForestDetector().fit(gaussian(0))
    outlier = gaussian(1, count=5) + 30.0
    assert detector.score(outlier).min() > 0.7
    assert np.median(detector.score(gaussian(2))) < 0.5


def test_restored_forest_needs_no_refit_and_scores_the_same():
    detector = IsolationForestDetector(seed=5, n_estimators=20).fit(gaussian(0))
    state = json.loads(json.dumps(detector.state(), allow_nan=False))
    restored = IsolationForestDetector.from_state(state)
    assert (restored.seed, restored.n_estimators) == (5, 20)
    np.testing.assert_array_equal(restored.score(gaussian(1)), detector.score(gaussian(1)))
