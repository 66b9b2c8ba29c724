"""Order statistics of every column at once: numpy's nanquantile and nanmedian to the bit, NaN and infinities
included; and means and spreads that skip NaN, numpy's to the bit whether or not a value is NaN."""

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from stream_jobs.engine.column_stats import column_nanmedians, column_quantiles, nanmean, nanstd

VALUES = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64), st.sampled_from([0.0, 1.0, 5.0]))


@settings(max_examples=300, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 40), st.integers(1, 12)), elements=VALUES),
       st.lists(st.floats(0.0, 1.0), min_size=1, max_size=4))
def test_every_column_s_quantiles_are_numpy_s_own(stats, quantiles):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        wanted = np.nanquantile(stats, quantiles, axis=0)
    got = column_quantiles(stats, quantiles)
    assert got.shape == wanted.shape
    assert np.array_equal(got, wanted, equal_nan=True)


def test_a_column_with_no_value_has_no_quantile_and_says_nothing():
    stats = np.array([[np.nan, 1.0], [np.nan, 3.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        low, high = column_quantiles(stats, [0.25, 0.75])
    assert np.isnan(low[0]) and np.isnan(high[0]) and low[1] == 1.5 and high[1] == 2.5


@settings(max_examples=300, deadline=None)
@given(arrays(np.float64, st.tuples(st.sampled_from([1, 2, 3, 4, 7, 40, 600, 601]), st.integers(1, 12)),
              elements=st.one_of(st.floats(-1e300, 1e300), st.sampled_from([np.nan, np.inf, -np.inf, 0.0, 5.0]))))
def test_every_column_s_median_is_numpy_s_own(stats):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        wanted = np.nanmedian(stats, axis=0)
    got = column_nanmedians(stats)
    assert got.shape == wanted.shape
    assert np.array_equal(got, wanted, equal_nan=True)


def test_a_median_near_the_largest_float_does_not_overflow():
    """numpy's median of fewer than 600 rows adds the middle value to itself and halves it, which overflows here."""
    assert column_nanmedians(np.array([[8.98846567e307], [np.nan]]))[0] == 8.98846567e307


def test_a_column_with_no_value_has_no_median_and_says_nothing():
    stats = np.array([[np.nan, 1.0], [np.nan, 4.0], [np.nan, np.nan]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        medians = column_nanmedians(stats)
    assert np.isnan(medians[0]) and medians[1] == 2.5


@settings(max_examples=300, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 40), st.integers(1, 12)),
              elements=st.one_of(st.floats(-1e150, 1e150), st.sampled_from([np.nan, 0.0, 1e-300, 7.0]))),
       st.sampled_from([0, 1]))
def test_means_and_spreads_that_skip_nan_are_numpy_s_own(values, axis):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        wanted_mean, wanted_std = np.nanmean(values, axis=axis), np.nanstd(values, axis=axis)
        got_mean, got_std = nanmean(values, axis), nanstd(values, axis)
    assert np.array_equal(got_mean, wanted_mean, equal_nan=True)
    assert np.array_equal(got_std, wanted_std, equal_nan=True)
