import warnings

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from stream_jobs.engine import features as features_module
from stream_jobs.engine.features import (DYNAMIC_FEATURES, EVENT_FEATURES, dynamic_features,
                                         dynamic_features_in_numpy, event_features, event_features_in_numpy,
                                         feature_layout)

SECONDS = np.arange(30) * 0.1
COLUMN = {name: i for i, name in enumerate(DYNAMIC_FEATURES)}


def random_signal(seed: int = 3, channels: int = 4) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.gamma(2.0, size=(30, channels)) * 10 + np.arange(30)[:, None] * 0.5


def direct_acf1(series: np.ndarray) -> float:
    centred = series - series.mean()
    return float(np.dot(centred[:-1], centred[1:]) / np.dot(centred, centred))


def test_dynamic_moments_and_slope_match_numpy():
    signal = random_signal()
    features = dynamic_features(SECONDS, signal)
    assert features.shape == (4, len(DYNAMIC_FEATURES))
    np.testing.assert_allclose(features[:, COLUMN["mean"]], signal.mean(axis=0))
    np.testing.assert_allclose(features[:, COLUMN["std"]], signal.std(axis=0))
    np.testing.assert_allclose(features[:, COLUMN["min"]], signal.min(axis=0))
    np.testing.assert_allclose(features[:, COLUMN["max"]], signal.max(axis=0))
    np.testing.assert_allclose(features[:, COLUMN["slope"]], [np.polyfit(SECONDS, s, 1)[0] for s in signal.T])


def test_skew_and_kurtosis_match_scipy():
    signal = random_signal(seed=11, channels=6)
    features = dynamic_features(SECONDS, signal)
    np.testing.assert_allclose(features[:, COLUMN["skew"]], scipy.stats.skew(signal, axis=0, bias=True))
    np.testing.assert_allclose(features[:, COLUMN["kurtosis"]],
                               scipy.stats.kurtosis(signal, axis=0, fisher=True, bias=True))


def test_moments_survive_a_large_offset():
    signal = random_signal(seed=5) + 1e9
    features = dynamic_features(SECONDS, signal)
    np.testing.assert_allclose(features[:, COLUMN["std"]], signal.std(axis=0), rtol=1e-6)
    np.testing.assert_allclose(features[:, COLUMN["skew"]], scipy.stats.skew(signal, axis=0), rtol=1e-4, atol=1e-6)


def test_acf1_matches_a_direct_computation():
    signal = random_signal(seed=7, channels=5)
    features = dynamic_features(SECONDS, signal)
    np.testing.assert_allclose(features[:, COLUMN["acf1"]], [direct_acf1(s) for s in signal.T])


def test_acf1_sees_persistence_and_alternation():
    persistent = np.repeat([0.0, 1.0, 0.0, 1.0, 0.0, 1.0], 5)
    alternating = np.tile([0.0, 1.0], 15)
    acf = dynamic_features(SECONDS, np.column_stack([persistent, alternating]))[:, COLUMN["acf1"]]
    assert acf[0] > 0.5 and acf[1] < -0.9


def test_acf1_uses_only_consecutive_finite_pairs():
    series = np.array([1.0, 3.0, np.nan, 2.0, 5.0, 4.0, np.nan, 6.0, 1.0, 2.0])
    finite = series[np.isfinite(series)]
    centred = np.where(np.isfinite(series), series - finite.mean(), np.nan)
    products = centred[:-1] * centred[1:]
    expected = np.nansum(products) / np.nansum(centred ** 2)
    acf = dynamic_features(np.arange(10) * 0.1, series[:, None])[0, COLUMN["acf1"]]
    assert acf == pytest.approx(expected)


def test_stationarity_separates_a_step_from_a_flat_or_noisy_signal():
    rng = np.random.default_rng(1)
    step = np.r_[np.zeros(15), np.ones(15)]
    noise = rng.normal(size=30)
    signal = np.column_stack([step, np.full(30, 4.2), noise, step * 10 + noise * 0.1])
    stationarity = dynamic_features(SECONDS, signal)[:, COLUMN["stationarity"]]
    assert stationarity[0] == pytest.approx(2.0)
    assert stationarity[1] == 0.0
    assert stationarity[2] < 1.0
    assert stationarity[3] > 1.9 and stationarity[3] <= 2.0


def test_constant_channel_has_degenerate_not_unknown_shape():
    features = dynamic_features(SECONDS, np.full((30, 1), 0.1))[0]
    for name in ("skew", "kurtosis", "acf1", "stationarity", "std", "slope"):
        assert features[COLUMN[name]] == pytest.approx(0.0, abs=1e-12), name
    assert features[COLUMN["mean"]] == pytest.approx(0.1)


def test_nan_samples_are_ignored():
    signal = random_signal(seed=9, channels=3)
    holed = signal.copy()
    holed[[2, 11, 20], 1] = np.nan
    features = dynamic_features(SECONDS, holed)
    kept = np.isfinite(holed[:, 1])
    np.testing.assert_allclose(features[0], dynamic_features(SECONDS, signal)[0])
    np.testing.assert_allclose(features[1, COLUMN["mean"]], holed[kept, 1].mean())
    np.testing.assert_allclose(features[1, COLUMN["std"]], holed[kept, 1].std())
    np.testing.assert_allclose(features[1, COLUMN["skew"]], scipy.stats.skew(holed[kept, 1]))
    np.testing.assert_allclose(features[1, COLUMN["slope"]], np.polyfit(SECONDS[kept], holed[kept, 1], 1)[0])


def test_too_few_samples_give_nan_shape_and_all_nan_gives_nan_everywhere():
    signal = np.full((30, 3), np.nan)
    signal[:, 0] = np.arange(30.0)
    signal[[4, 9], 1] = [1.0, 2.0]
    features = dynamic_features(SECONDS, signal)
    shape = [COLUMN[n] for n in ("skew", "kurtosis", "acf1", "stationarity")]
    assert np.isfinite(features[0]).all()
    assert np.isnan(features[1, shape]).all() and np.isfinite(features[1, :4]).all()
    assert np.isnan(features[2]).all()


def test_event_features_count_totals_bursts_and_peaks():
    increments = np.array([[0, 1, 0, 0],
                           [2, 1, 0, 0],
                           [3, 0, 0, np.nan],
                           [0, 1, 0, 5],
                           [0, 0, 0, np.nan],
                           [4, 1, 0, 2]], dtype=float)
    features = event_features(increments)
    assert features.shape == (4, len(EVENT_FEATURES))
    np.testing.assert_array_equal(features[:, 0], [9, 4, 0, 7])
    np.testing.assert_array_equal(features[:, 1], [2, 3, 0, 1])
    np.testing.assert_array_equal(features[:, 2], [4, 1, 0, 5])


def test_event_features_of_a_channel_without_samples_are_nan():
    features = event_features(np.array([[np.nan, 1.0], [np.nan, 0.0]]))
    assert np.isnan(features[0]).all() and np.isfinite(features[1]).all()


def test_layout_splits_channels_by_kind():
    layout = feature_layout(("g", "c", "e", "s", "d"), ("gauge", "counter", "event", "static", "derived"))
    assert layout.dynamic_channels == (0, 1, 4) and layout.event_channels == (2,)
    assert len(layout.names) == len(layout) == 3 * len(DYNAMIC_FEATURES) + len(EVENT_FEATURES)
    assert layout.names[:2] == ["g:mean", "g:std"] and layout.names[-3:] == ["e:sum", "e:bursts", "e:max"]
    assert not any(name.startswith("s:") for name in layout.names)
    np.testing.assert_array_equal(layout.channel_of_feature[[0, len(DYNAMIC_FEATURES), -1]], [0, 1, 2])


def test_layout_rejects_unknown_kinds_and_misaligned_inputs():
    with pytest.raises(ValueError, match="histogram"):
        feature_layout(("a",), ("histogram",))
    with pytest.raises(ValueError, match="kind"):
        feature_layout(("a", "b"), ("gauge",))


def test_layout_compute_turns_event_rates_back_into_counts():
    frame_seconds = np.array([0.0, 0.1, 0.3, 0.4, 0.5])
    steps = np.diff(frame_seconds)
    counts = np.array([2.0, 0.0, 3.0, 1.0])
    gauge = np.array([1.0, 2.0, 3.0, 4.0])
    layout = feature_layout(("gauge", "static", "errors"), ("gauge", "static", "event"))
    signal = np.column_stack([gauge, np.full(4, 7.0), counts / steps])
    features = layout.compute(frame_seconds, signal)
    assert features.shape == (len(layout),)
    named = dict(zip(layout.names, features))
    assert named["errors:sum"] == pytest.approx(6.0)
    assert named["errors:bursts"] == 2.0 and named["errors:max"] == pytest.approx(3.0)
    assert named["gauge:mean"] == 2.5
    assert named["gauge:slope"] == pytest.approx(np.polyfit(frame_seconds[1:], gauge, 1)[0])


def test_layout_compute_rejects_misaligned_times():
    layout = feature_layout(("a",), ("gauge",))
    with pytest.raises(ValueError, match="frame times"):
        layout.compute(np.arange(4) * 0.1, np.zeros((4, 1)))


def test_inputs_are_not_mutated_and_results_are_deterministic():
    signal = random_signal(seed=2)
    signal[3, 1] = np.nan
    seconds, before_signal, before_seconds = SECONDS.copy(), signal.copy(), SECONDS.copy()
    first = dynamic_features(seconds, signal)
    np.testing.assert_array_equal(first, dynamic_features(seconds, signal))
    np.testing.assert_array_equal(signal, before_signal)
    np.testing.assert_array_equal(seconds, before_seconds)
    increments = np.abs(signal)
    before_increments = increments.copy()
    np.testing.assert_array_equal(event_features(increments), event_features(increments))
    np.testing.assert_array_equal(increments, before_increments)


def test_output_shapes_for_edge_sizes():
    assert dynamic_features(np.arange(0.0), np.zeros((0, 3))).shape == (3, len(DYNAMIC_FEATURES))
    assert dynamic_features(SECONDS, np.zeros((30, 0))).shape == (0, len(DYNAMIC_FEATURES))
    assert event_features(np.zeros((0, 2))).shape == (2, len(EVENT_FEATURES))
    assert feature_layout((), ()).compute(np.arange(3.0), np.zeros((2, 0))).shape == (0,)


finite_floats = st.floats(allow_nan=False, allow_infinity=False, width=64)
signals = hnp.arrays(np.float64, st.tuples(st.integers(0, 12), st.integers(1, 4)),
                     elements=st.one_of(finite_floats, st.just(np.nan)))


@settings(max_examples=300, deadline=None)
@given(signals)
def test_any_finite_signal_gives_finite_or_nan_features_without_warnings(signal):
    seconds = np.arange(len(signal)) * 0.1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        features = dynamic_features(seconds, signal)
        events = event_features(np.abs(np.clip(signal, -1e300, 1e300)) / 1e290)
    assert features.shape == (signal.shape[1], len(DYNAMIC_FEATURES))
    assert not np.isinf(features).any()
    assert not np.isinf(events).any()
    shape = features[:, [COLUMN[n] for n in ("skew", "acf1", "stationarity")]]
    bound = len(signal) / np.sqrt(max(len(signal) - 1, 1))  # the largest |skew| or stationarity n samples allow
    assert (np.abs(shape[np.isfinite(shape)]) <= bound + 1e-9).all()


@pytest.mark.parametrize("samples", [1, 2, 3, 29])
def test_a_window_without_gaps_gets_the_same_features_as_one_with_gaps_elsewhere(samples):
    """Windows whose samples are all finite skip the masking; their features equal the masked computation's."""
    rng = np.random.default_rng(samples)
    seconds = 1.7e9 + 0.1 * np.arange(samples) + rng.uniform(0, 0.01, samples)
    signal = np.column_stack([rng.normal(50, 5, samples), np.full(samples, 3.0), np.linspace(0, 1e12, samples),
                              rng.normal(0, 1e-9, samples)])
    with_gaps = np.column_stack([signal, np.full(samples, np.nan)])
    np.testing.assert_allclose(dynamic_features(seconds, signal), dynamic_features(seconds, with_gaps)[:4],
                               rtol=1e-9, atol=1e-12, equal_nan=True)


def test_feature_names_are_made_when_read_and_match_the_full_list():
    layout = feature_layout(("g", "c", "e", "s"), ("gauge", "counter", "event", "static"))
    expected = ([f"{c}:{f}" for c in ("g", "c") for f in DYNAMIC_FEATURES] + [f"e:{f}" for f in EVENT_FEATURES])
    assert list(layout.names) == expected
    assert [layout.names[i] for i in range(-len(expected), 0)] == expected
    assert layout.names[3:9:2] == expected[3:9:2]
    with pytest.raises(IndexError):
        layout.names[len(expected)]
    assert [":".join(layout.name_parts(i)) for i in range(len(expected))] == expected


def test_columns_of_channels_are_where_their_named_features_sit():
    names, kinds = ("g", "c", "e", "s", "e2", "d"), ("gauge", "counter", "event", "static", "event", "derived")
    full = feature_layout(names, kinds)
    kept = np.array([True, False, False, True, True, True])
    part = feature_layout(tuple(np.asarray(names)[kept]), tuple(np.asarray(kinds)[kept]))
    by_name = [list(full.names).index(name) for name in part.names]
    np.testing.assert_array_equal(full.columns_of(kept), by_name)
    np.testing.assert_array_equal(part.columns_of([n.startswith("e") for n in part.channel_names]),
                                  [i for i, n in enumerate(part.names) if n.startswith("e")])
    assert full.columns_of(np.zeros(len(names), bool)).size == 0


def test_a_window_laid_out_by_column_gets_the_features_of_the_same_window_laid_out_by_row():
    """signal[:, kept] lays a window out by column; its features are those of the same values in row order, to the
    bit, so that how a window was cut never changes what is judged."""
    rng = np.random.default_rng(3)
    window = rng.normal(size=(30, 40)) * rng.lognormal(size=40) + rng.normal(size=40) * 1e6
    by_column = np.asfortranarray(window)
    seconds = np.arange(30) * 0.1
    assert by_column.strides[0] == 8
    assert np.array_equal(dynamic_features(seconds, by_column), dynamic_features(seconds, window), equal_nan=True)


def test_the_compiled_kernel_is_built_where_the_scanner_is():
    """`pip install` builds both extensions with the same compiler: a host with the agent's scanner and without the
    engine's kernel was installed wrongly, and its workers would be several times slower."""
    from producers.fast_read.scanned_layout import scanner_available
    assert (features_module._window_features is not None) == scanner_available()


# windows as a host sends them: levels of any size, noise of any share of them, some flat channels, some missing
window_shapes = st.tuples(st.integers(0, 40), st.integers(2, 12))


@st.composite
def windows(draw, missing: bool = True):
    samples, channels = draw(window_shapes)
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    levels = rng.normal(size=channels) * 10.0 ** rng.integers(-3, 13, size=channels)
    noise = rng.normal(size=(samples, channels)) * 10.0 ** rng.integers(-6, 9, size=channels)
    window = levels + noise * (rng.random(channels) > 0.2)
    if draw(st.booleans()):
        window = np.round(window)
    if missing and draw(st.booleans()):
        window[rng.random((samples, channels)) < draw(st.floats(0, 0.5))] = draw(st.sampled_from([np.nan, np.inf]))
    return np.asfortranarray(window) if draw(st.booleans()) else window


@settings(max_examples=300, deadline=None)
@given(windows())
def test_the_compiled_kernel_gives_numpys_features_to_the_bit(window):
    """The kernel adds in numpy's order (down each column of a window of two or more channels), so replacing one by
    the other never changes a verdict; a window with a missing sample is numpy's to compute."""
    seconds = 1.7e9 + 0.1 * np.arange(len(window))
    assert np.array_equal(dynamic_features(seconds, window), dynamic_features_in_numpy(seconds, window),
                          equal_nan=True)
    increments = np.abs(window) / 1e6
    assert np.array_equal(event_features(increments), event_features_in_numpy(increments), equal_nan=True)


@settings(max_examples=100, deadline=None)
@given(windows(missing=False))
def test_the_compiled_kernel_agrees_with_numpy_on_one_channel_to_rounding(window):
    """numpy sums a single column pairwise, the kernel in order: the same features to rounding error."""
    column = window[:, :1]
    seconds = 1.7e9 + 0.1 * np.arange(len(window))
    compiled, in_numpy = dynamic_features(seconds, column), dynamic_features_in_numpy(seconds, column)
    assert np.array_equal(np.isnan(compiled), np.isnan(in_numpy))
    well_conditioned = compiled[:, COLUMN["std"]] > 1e-6 * np.abs(compiled[:, COLUMN["mean"]])
    np.testing.assert_allclose(compiled[well_conditioned], in_numpy[well_conditioned], rtol=1e-6, atol=1e-9)
