"""The z-score detector: shifted windows outscore baseline ones, constant and missing features cannot blow the score
up, contributions are absolute z, z does not move when a feature is shifted and scaled, the paper's has no cap, and
its state restores mean and scale."""

import json
import math

import numpy as np
import pytest

from stream_jobs.engine.detectors.zscore import Z_CAP, ZScoreDetector, capped


def baseline(seed=0):
    return np.random.default_rng(seed).normal(10.0, 2.0, size=(200, 6))


def test_shifted_windows_score_higher_than_baseline_windows():
    detector = ZScoreDetector().fit(baseline())
    normal = detector.score(baseline(seed=1)[:20])
    shifted = baseline(seed=2)[:20]
    shifted[:, 2] += 20.0
    assert detector.score(shifted).min() > normal.max()


def test_scores_are_deterministic_and_inputs_unchanged():
    data = baseline()
    before = data.copy()
    first = ZScoreDetector().fit(data).score(data)
    second = ZScoreDetector().fit(data).score(data)
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(data, before)


def test_constant_baseline_feature_cannot_blow_up_the_score():
    data = baseline()
    data[:, 0] = 5.0
    detector = ZScoreDetector().fit(data)
    probe = data[:1].copy()
    probe[0, 0] = 6.0
    assert np.abs(detector.z(probe)).max() == Z_CAP


def test_nan_features_take_no_part_and_never_leak_into_scores():
    detector = ZScoreDetector().fit(baseline())
    probe = baseline(seed=4)[:3]
    probe[:, 1] = np.nan
    assert np.isfinite(detector.score(probe)).all()
    assert detector.score(np.full((1, 6), np.nan))[0] == 0.0


def test_scoring_before_fit_is_an_error():
    with pytest.raises(RuntimeError, match="before fit"):
        ZScoreDetector().score(baseline())


def test_contributions_are_absolute_z_with_missing_features_at_zero():
    detector = ZScoreDetector().fit(baseline())
    probe = baseline(seed=5)[:4]
    probe[:, 3] = np.nan
    contributions = detector.contributions(probe)
    np.testing.assert_array_equal(contributions[:, :3], np.abs(detector.z(probe))[:, :3])
    assert (contributions[:, 3] == 0).all()


def test_state_restores_mean_and_scale_including_missing_baselines():
    data = baseline()
    data[:, 4] = np.nan
    detector = ZScoreDetector(absolute_floor=1e-6, cap=math.inf).fit(data)
    restored = ZScoreDetector.from_state(json.loads(json.dumps(detector.state(), allow_nan=False)))
    np.testing.assert_array_equal(restored.mean, detector.mean)
    np.testing.assert_array_equal(restored.scale, detector.scale)
    assert restored.absolute_floor == 1e-6 and restored.cap == math.inf
    assert restored.fitted and not ZScoreDetector().fitted


def test_z_does_not_move_when_a_feature_is_shifted_and_scaled():
    data, probe = baseline(), baseline(seed=6)[:20]
    probe[:, 1] += 9.0
    moved = np.array([1.0, 1_000.0, 1.0, 1e-3, 1.0, 1.0]), np.array([0.0, 1e6, 0.0, -5e4, 0.0, 0.0])
    plain = ZScoreDetector().fit(data).z(probe)
    scaled = ZScoreDetector().fit(data * moved[0] + moved[1]).z(probe * moved[0] + moved[1])
    np.testing.assert_allclose(scaled, plain, rtol=1e-6, atol=1e-6)


def test_the_papers_mean_absolute_z_has_no_cap():
    data = baseline()
    probe = data[:1] + 1_000.0  # about 500 σ on every feature
    assert ZScoreDetector().fit(data).score(probe)[0] == Z_CAP
    assert ZScoreDetector(cap=math.inf).fit(data).score(probe)[0] > 5 * Z_CAP


def test_capping_is_numpy_s_clip_of_nan_to_num_to_the_bit():
    z = np.array([np.nan, np.inf, -np.inf, 1e308, -3.5, 0.0, 49.999, 50.0, 51.0, -1e-320])
    assert np.array_equal(capped(z), np.clip(np.nan_to_num(z, nan=0.0), -Z_CAP, Z_CAP))
    assert np.array_equal(capped(z, 1_000.0), np.clip(np.nan_to_num(z, nan=0.0), -1_000.0, 1_000.0))
