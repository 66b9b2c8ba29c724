import numpy as np

from stream_jobs.engine.features import FEATURES, feature_names, window_features


def test_features_match_numpy_reference():
    rng = np.random.default_rng(3)
    timestamps = np.arange(30) * 100_000_000
    signal = rng.normal(size=(30, 4)) + np.arange(30)[:, None] * 0.5
    features = window_features(timestamps, signal)
    assert features.shape == (4, len(FEATURES))
    np.testing.assert_allclose(features[:, 0], signal.mean(axis=0))
    np.testing.assert_allclose(features[:, 1], signal.std(axis=0))
    np.testing.assert_allclose(features[:, 2], signal.min(axis=0))
    np.testing.assert_allclose(features[:, 3], signal.max(axis=0))
    seconds = timestamps / 1e9
    np.testing.assert_allclose(features[:, 4], [np.polyfit(seconds, signal[:, c], 1)[0] for c in range(4)])


def test_nan_samples_are_ignored_and_all_nan_channels_give_nan():
    timestamps = np.arange(5) * 100_000_000
    signal = np.array([[1.0, np.nan], [2.0, np.nan], [np.nan, np.nan], [4.0, np.nan], [5.0, np.nan]])
    features = window_features(timestamps, signal)
    assert features[0, 0] == 3.0 and np.isfinite(features[0, 4])
    assert np.isnan(features[1]).all()


def test_feature_names_are_channel_major():
    assert feature_names(("a", "b"))[:2] == ["a:mean", "a:std"]
    assert len(feature_names(("a", "b"))) == 2 * len(FEATURES)
