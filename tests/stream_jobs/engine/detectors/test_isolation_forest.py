"""The Isolation Forest detector: scores that agree with scikit-learn's, splits that divide their windows within the
depth limit, a forest decided by its seed, missing values imputed, scores that do not move when a feature is scaled
and shifted, and a restored forest scoring the same."""

import json

import numpy as np
import pytest
from sklearn.ensemble import IsolationForest

from stream_jobs.engine.detectors.isolation_forest import IsolationForestDetector


def gaussian(seed, count=400, features=9):
    return np.random.default_rng(seed).normal(40.0, 3.0, size=(count, features))


@pytest.mark.parametrize("count, features, max_samples", [(700, 9, "auto"), (120, 30, "auto"), (500, 6, 0.5),
                                                          (60, 2000, "auto")])
def test_scores_agree_with_scikit_learns_forest(count, features, max_samples):
    """The same algorithm grown with other random draws: the scores of typical and isolated windows agree with
    scikit-learn's to within the spread of a 100-tree forest, and rank windows alike."""
    baseline = gaussian(0, count, features)
    probe = np.vstack([gaussian(1, 200, features), gaussian(2, 20, features) + np.linspace(3.0, 15.0, 20)[:, None]])
    ours = IsolationForestDetector(seed=3, max_samples=max_samples).fit(baseline).score(probe)
    reference = -IsolationForest(random_state=3, max_samples=max_samples).fit(baseline).score_samples(probe)
    assert abs(ours[:200].mean() - reference[:200].mean()) < 0.02
    assert abs(ours[200:].mean() - reference[200:].mean()) < 0.03
    assert np.corrcoef(ours, reference)[0, 1] > 0.95


def test_every_split_divides_its_windows_and_no_path_is_deeper_than_the_limit():
    baseline = gaussian(0, 300, 12)
    baseline[:, 3] = 7.0  # a constant feature is never split on
    forest = IsolationForestDetector(seed=1, n_estimators=10).fit(baseline).forest
    inner = forest["left"] != np.arange(forest["left"].size)
    assert 3 not in set(forest["feature"][inner].tolist())
    assert forest["depth"][0] <= int(np.ceil(np.log2(256)))
    leaves = ~inner
    assert (forest["path_length"][leaves] > 0).all() and (forest["path_length"][inner] == 0).all()
    assert set(forest["left"][inner].tolist()).isdisjoint(forest["right"][inner].tolist())


def test_a_single_window_or_a_constant_baseline_gives_one_leaf_per_tree():
    for baseline in (gaussian(0, 1, 4), np.full((30, 4), 2.0)):
        detector = IsolationForestDetector(n_estimators=7).fit(baseline)
        assert detector.forest["left"].size == 7
        assert np.isfinite(detector.score(gaussian(1, 3, 4))).all()


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


def test_scores_do_not_move_when_a_feature_is_scaled_and_put_on_a_large_level():
    """A feature 1,000 times wider on a level of 1e8, where float32 resolves 8 and its spread is 3,000."""
    baseline, probe = gaussian(0), np.vstack([gaussian(1, count=50), gaussian(2, count=5) + 9.0])
    moved = lambda windows: np.column_stack([1_000.0 * windows[:, 0] + 1e8, windows[:, 1:]])
    plain = IsolationForestDetector(seed=4).fit(baseline).score(probe)
    np.testing.assert_allclose(IsolationForestDetector(seed=4).fit(moved(baseline)).score(moved(probe)), plain,
                               rtol=1e-6)


def test_a_state_of_an_earlier_version_compares_raw_features():
    detector = IsolationForestDetector(seed=5, n_estimators=20).fit(gaussian(0))
    state = json.loads(json.dumps(detector.state(), allow_nan=False))
    del state["unit"]
    restored, probe = IsolationForestDetector.from_state(state), gaussian(1)
    np.testing.assert_array_equal(restored.score((probe - detector.mean) / detector.unit), detector.score(probe))
