"""Every detector keeps the same promises (river's estimator checks): shapes, seeds, purity, NaN, state, ranking."""

import json

import numpy as np
import pytest

from stream_jobs.engine.detectors import (Detector, IsolationForestDetector, MahalanobisPCADetector, ZScoreDetector,
                                          restore_detector)

FEATURES = 40
LEVELS = np.linspace(1.0, 400.0, FEATURES)
SPREADS = np.linspace(0.1, 30.0, FEATURES)
CORRELATION = 0.995

DETECTORS = {
    "zscore": lambda seed: ZScoreDetector(),
    "mahalanobis": lambda seed: MahalanobisPCADetector(seed=seed),
    "isolation_forest": lambda seed: IsolationForestDetector(seed=seed),
}


def windows(seed, count=300):
    """Gaussian features of mixed levels and spreads; features 0 and 1 move together (correlation 0.995)."""
    unit = np.random.default_rng(seed).normal(size=(count, FEATURES))
    unit[:, 1] = CORRELATION * unit[:, 0] + np.sqrt(1 - CORRELATION ** 2) * unit[:, 1]
    return LEVELS + SPREADS * unit


def shifted(seed, count=50):
    """A few features 6σ above their baseline."""
    data = windows(seed, count)
    moved = [5, 12, 17, 25, 30]
    data[:, moved] += 6 * SPREADS[moved]
    return data


def broken_correlation(seed, count=50):
    """Features 0 and 1 moving apart, each well within its own baseline range (±1.5σ)."""
    data = windows(seed, count)
    data[:, 0] = LEVELS[0] + 1.5 * SPREADS[0]
    data[:, 1] = LEVELS[1] - 1.5 * SPREADS[1]
    return data


def ranking(higher, lower):
    """Probability that a window of `higher` outscores one of `lower` (the area under the ROC curve)."""
    return float(np.mean(higher[:, None] > lower[None, :]))


@pytest.fixture(params=sorted(DETECTORS))
def make(request):
    return DETECTORS[request.param]


def test_detectors_share_the_interface_and_fit_returns_the_detector(make):
    detector = make(0)
    assert isinstance(detector, Detector) and not detector.fitted
    assert detector.fit(windows(0)) is detector and detector.fitted


def test_score_is_one_finite_float_per_window(make):
    scores = make(0).fit(windows(0)).score(windows(1, 17))
    assert scores.shape == (17,) and scores.dtype == np.float64 and np.isfinite(scores).all()


def test_same_seed_same_scores(make):
    first = make(7).fit(windows(0)).score(windows(1))
    second = make(7).fit(windows(0)).score(windows(1))
    np.testing.assert_array_equal(first, second)


def test_inputs_are_not_mutated(make):
    baseline, probe = windows(0), windows(1)
    baseline[3, 4] = probe[2, 6] = np.nan
    baseline_before, probe_before = baseline.copy(), probe.copy()
    make(0).fit(baseline).score(probe)
    np.testing.assert_array_equal(baseline, baseline_before)
    np.testing.assert_array_equal(probe, probe_before)


def test_nan_in_baseline_or_windows_never_leaks_into_scores(make):
    baseline = windows(0)
    baseline[::7, 3] = np.nan
    baseline[:, 9] = np.nan
    probe = windows(1, 20)
    probe[:, 3] = np.nan
    probe[5] = np.nan
    assert np.isfinite(make(0).fit(baseline).score(probe)).all()


def test_constant_baseline_features_are_tolerated(make):
    baseline = windows(0)
    baseline[:, [2, 8]] = 5.0
    assert np.isfinite(make(0).fit(baseline).score(windows(1, 20))).all()


def test_scoring_before_fit_is_an_error(make):
    with pytest.raises(RuntimeError, match="before fit"):
        make(0).score(windows(1))


def test_state_is_strict_json_and_restores_identical_scores(make):
    detector = make(0).fit(windows(0))
    text = json.dumps(detector.state(), allow_nan=False)
    restored = restore_detector(json.loads(text))
    assert type(restored) is type(detector) and restored.fitted
    np.testing.assert_array_equal(restored.score(windows(1)), detector.score(windows(1)))


def test_state_of_another_detector_is_refused(make):
    detector = make(0)
    other = next(d for name, d in DETECTORS.items() if name != detector.name)(0).fit(windows(0))
    with pytest.raises(ValueError, match="expected"):
        type(detector).from_state(other.state())


def test_shifted_windows_outrank_baseline_windows(make):
    detector = make(0).fit(windows(0))
    assert ranking(detector.score(shifted(2)), detector.score(windows(1))) > 0.95


def test_only_mahalanobis_sees_a_broken_correlation():
    baseline, fresh, broken = windows(0), windows(1), broken_correlation(3)
    mahalanobis = MahalanobisPCADetector().fit(baseline)
    zscore = ZScoreDetector().fit(baseline)
    assert mahalanobis.score(broken).min() > 2 * mahalanobis.score(fresh).max()
    assert ranking(zscore.score(broken), zscore.score(fresh)) < 0.75
