"""The Mahalanobis detector over principal components: the share of variance kept, fixed component signs, contributions
as shares of the distance, constant and missing features dropped, capped extremes, the paper's distance over the major
components alone, its state round trip, and a window that scores the same alone or among many."""

import doctest
import json
import math

import numpy as np
import pytest

import stream_jobs.engine.detectors.mahalanobis as mahalanobis
from stream_jobs.engine.detectors import state
from stream_jobs.engine.detectors.mahalanobis import MahalanobisPCADetector


def gaussian(seed, count=300, features=12):
    return np.random.default_rng(seed).normal(5.0, 2.0, size=(count, features))


def low_rank(seed, count=400):
    """Twelve features driven by three factors, plus a little noise."""
    rng = np.random.default_rng(seed)
    loadings = np.random.default_rng(99).normal(size=(3, 12))
    return rng.normal(size=(count, 3)) @ loadings + 0.05 * rng.normal(size=(count, 12))


def test_docstring_example_holds():
    assert doctest.testmod(mahalanobis).failed == 0


def test_major_components_hold_the_requested_share_of_variance():
    assert MahalanobisPCADetector(variance=0.95).fit(low_rank(0)).major_components == 3
    assert MahalanobisPCADetector(variance=1.0).fit(gaussian(0)).major_components == 12


def test_component_signs_are_fixed_so_row_order_does_not_matter():
    data = gaussian(0)
    detector = MahalanobisPCADetector().fit(data)
    permuted = MahalanobisPCADetector().fit(data[np.random.default_rng(1).permutation(len(data))])
    largest = detector.components[np.arange(len(detector.components)),
                                  np.argmax(np.abs(detector.components), axis=1)]
    assert (largest > 0).all()
    np.testing.assert_allclose(permuted.components, detector.components, atol=1e-9)
    np.testing.assert_allclose(permuted.score(gaussian(2)), detector.score(gaussian(2)), rtol=1e-9)


def test_contributions_are_non_negative_shares_of_the_squared_distance():
    detector = MahalanobisPCADetector().fit(gaussian(0))
    probe = gaussian(1, count=20)
    contributions = detector.contributions(probe)
    assert contributions.shape == probe.shape and (contributions >= 0).all()
    np.testing.assert_allclose(contributions.sum(axis=1), detector.score(probe) ** 2, rtol=1e-9)


def test_contributions_point_at_the_shifted_feature():
    detector = MahalanobisPCADetector().fit(gaussian(0))
    probe = gaussian(1, count=10)
    probe[:, 7] += 6 * 2.0
    assert (np.argmax(detector.contributions(probe), axis=1) == 7).all()


def test_contributions_point_at_both_sides_of_a_broken_correlation():
    data = low_rank(0)
    detector = MahalanobisPCADetector().fit(data)
    pair = np.argsort(-np.abs(np.corrcoef(data.T) - np.eye(12)).ravel())[0]
    first, second = divmod(int(pair), 12)
    sign = np.sign(np.corrcoef(data.T)[first, second])
    probe = low_rank(1, count=5)
    probe[:, first] = data[:, first].mean() + 1.5 * data[:, first].std()
    probe[:, second] = data[:, second].mean() - sign * 1.5 * data[:, second].std()
    top_two = np.sort(np.argsort(-detector.contributions(probe), axis=1)[:, :2], axis=1)
    assert (top_two == sorted((first, second))).all()
    assert detector.score(probe).min() > detector.score(low_rank(2)).max()


def test_constant_and_all_missing_features_are_dropped_and_contribute_nothing():
    data = gaussian(0)
    data[:, 2] = 7.0
    data[:, 5] = np.nan
    detector = MahalanobisPCADetector().fit(data)
    assert not detector.kept[2] and not detector.kept[5] and detector.kept.sum() == 10
    probe = gaussian(1, count=3)
    probe[:, 2] = 1e6
    contributions = detector.contributions(probe)
    assert (contributions[:, [2, 5]] == 0).all() and np.isfinite(contributions).all()


def test_a_missing_value_counts_as_the_baseline_mean():
    data = gaussian(0)
    data[::5, 4] = np.nan
    detector = MahalanobisPCADetector().fit(data)
    probe = gaussian(1, count=3)
    at_mean = probe.copy()
    probe[:, 4] = np.nan
    at_mean[:, 4] = np.nanmean(data[:, 4])
    np.testing.assert_allclose(detector.score(probe), detector.score(at_mean), rtol=1e-12)


def test_fewer_windows_than_features_still_ranks_a_shift_first():
    detector = MahalanobisPCADetector().fit(gaussian(0, count=20, features=60))
    probe = gaussian(1, count=10, features=60)
    shifted = probe.copy()
    shifted[:, :5] += 6 * 2.0
    assert np.isfinite(detector.score(probe)).all()
    assert detector.score(shifted).min() > detector.score(probe).max()


def test_extreme_values_are_capped_not_infinite():
    detector = MahalanobisPCADetector().fit(gaussian(0))
    probe = gaussian(1, count=2)
    probe[0, 0], probe[1, 1] = np.inf, -1e300
    assert np.isfinite(detector.score(probe)).all()


def test_state_round_trip_keeps_every_fitted_array():
    detector = MahalanobisPCADetector(variance=0.9).fit(low_rank(0))
    restored = MahalanobisPCADetector.from_state(json.loads(json.dumps(detector.state(), allow_nan=False)))
    assert restored.major_components == detector.major_components and restored.variance == 0.9
    np.testing.assert_array_equal(restored.contributions(low_rank(1)), detector.contributions(low_rank(1)))


def test_a_state_with_the_earlier_float16_axes_restores_to_the_same_distances():
    detector = MahalanobisPCADetector(variance=0.9).fit(low_rank(0))
    earlier = detector.state()
    earlier["components"] = state.encode_array(detector.components.astype(np.float16))
    del earlier["axes"], earlier["axis_scales"]
    restored = MahalanobisPCADetector.from_state(json.loads(json.dumps(earlier, allow_nan=False)))
    assert restored.axes.dtype == np.int16
    np.testing.assert_allclose(restored.score(low_rank(1)), detector.score(low_rank(1)), rtol=2e-2)  # float16's own error


def test_axes_are_held_to_sixteen_bits_of_their_largest_loading():
    detector = MahalanobisPCADetector().fit(np.random.default_rng(5).normal(size=(40, 300)))
    exact, _ = mahalanobis._principal_axes(detector._standardise(np.random.default_rng(5).normal(size=(40, 300))))
    error = np.abs(detector.components - exact[:len(detector.components)]).max(axis=1)
    assert (error <= np.abs(exact[:len(detector.components)]).max(axis=1) / 32767).all()


def test_variance_outside_zero_to_one_is_refused():
    with pytest.raises(ValueError, match="variance"):
        MahalanobisPCADetector(variance=1.5)


def test_axes_of_a_wide_baseline_from_its_gram_matrix_equal_the_svds():
    rng = np.random.default_rng(4)
    wide = rng.normal(size=(40, 500)) * rng.uniform(0.5, 5.0, 500)
    axes, variances = mahalanobis._axes_from_gram(wide)
    _, singular_values, reference = np.linalg.svd(wide, full_matrices=False)
    np.testing.assert_allclose(variances, singular_values ** 2 / 40, rtol=1e-9)
    np.testing.assert_allclose(np.abs(np.sum(axes * reference, axis=1)), 1.0, atol=1e-9)


def test_axes_pooled_into_the_residual_are_dropped_without_changing_any_distance():
    """With more features than windows every minor variance is pooled, so only the major axes are kept; distances
    equal a whitening that keeps every axis of the baseline."""
    rng = np.random.default_rng(3)
    baseline, windows = rng.normal(size=(40, 200)), rng.normal(size=(5, 200)) * 1.5
    detector = MahalanobisPCADetector().fit(baseline)
    assert len(detector.components) == detector.major_components < 39

    standardised = detector._standardise(baseline)
    _, singular_values, axes = np.linalg.svd(standardised, full_matrices=False)
    variances = singular_values ** 2 / len(baseline)
    spanned = variances > 1e-9 * variances[0]
    axes, variances = axes[spanned], variances[spanned]
    variances[detector.major_components:] = detector.residual_variance
    deviation = detector._standardise(windows)
    projected = deviation @ axes.T
    expected = np.sqrt((projected ** 2 / variances).sum(axis=1)
                       + ((deviation ** 2).sum(axis=1) - (projected ** 2).sum(axis=1)) / detector.residual_variance)
    np.testing.assert_allclose(detector.score(windows), expected, rtol=2e-3)


def papers_distance(baseline, windows, share=0.95):
    """§4.3 as written: standardise by the baseline, project onto the components that hold `share` of the variance,
    Mahalanobis distance over those alone."""
    mean, spread = baseline.mean(axis=0), baseline.std(axis=0)
    variances, axes = np.linalg.eigh(np.cov(((baseline - mean) / spread).T, bias=True))
    variances, axes = variances[::-1], axes[:, ::-1]
    major = int(np.searchsorted(np.cumsum(variances) / variances.sum(), share) + 1)
    projected = ((windows - mean) / spread) @ axes[:, :major]
    return np.sqrt((projected ** 2 / variances[:major]).sum(axis=1))


def test_without_minor_components_the_distance_is_the_papers_over_the_major_ones():
    detector = MahalanobisPCADetector(minor_components=False, cap=math.inf).fit(low_rank(0))
    np.testing.assert_allclose(detector.score(low_rank(1, count=50)), papers_distance(low_rank(0), low_rank(1, 50)),
                               rtol=1e-3)
    assert detector.major_components == 3


def test_a_departure_outside_the_major_components_is_seen_only_with_the_minor_ones():
    """One feature off the three factors' plane by 20 times the noise."""
    baseline, probe = low_rank(0), low_rank(1, count=1)
    probe[0, 0] += 1.0
    paper = MahalanobisPCADetector(minor_components=False).fit(baseline)
    full = MahalanobisPCADetector().fit(baseline)
    assert full.score(probe)[0] > 2 * np.quantile(full.score(low_rank(2)), 0.99)
    assert paper.score(probe)[0] < np.quantile(paper.score(low_rank(2)), 0.99)


def test_state_round_trip_keeps_the_papers_distance():
    detector = MahalanobisPCADetector(minor_components=False, cap=math.inf).fit(low_rank(0))
    restored = MahalanobisPCADetector.from_state(json.loads(json.dumps(detector.state(), allow_nan=False)))
    assert not restored.minor_components and restored.cap == math.inf
    np.testing.assert_array_equal(restored.score(low_rank(1)), detector.score(low_rank(1)))


def test_a_window_scores_the_same_alone_or_among_many():
    rng = np.random.default_rng(11)
    baseline = rng.normal(size=(400, 180))
    baseline[:, :18] = 1.0  # constant features are dropped: the kept ones no longer fill whole cache lines
    detector = MahalanobisPCADetector().fit(baseline)
    windows = rng.normal(size=(300, 180))
    together = detector.score(windows)
    assert all(together[i] == detector.score(windows[i:i + 1].copy())[0] for i in range(len(windows)))
