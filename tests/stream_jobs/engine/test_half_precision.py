"""Units for float16 coding: a column's spread, or a small part of its level where it did not vary; a distance
beyond float16's reach widens its column's unit by the power of two that brings it within reach."""

import numpy as np

from stream_jobs.engine.half_precision import FLOAT16_REACH, column_units, widening


def test_units_are_the_spread_or_a_small_part_of_an_unchanging_level():
    rows = np.array([[1.0, 5.0, 0.0, np.nan], [3.0, 5.0, 0.0, np.nan], [np.nan, 5.0, 0.0, np.nan]])
    center, unit = column_units(rows)
    np.testing.assert_allclose(center, [2.0, 5.0, 0.0, 0.0])
    np.testing.assert_allclose(unit, [1.0, 5.0 * 2.0 ** -20, 1.0, 1.0])
    assert unit.dtype == np.float32


def test_units_scale_with_the_columns_units_and_ignore_their_offset():
    rows = np.random.default_rng(0).normal(size=(50, 3))
    unit = column_units(rows)[1]
    np.testing.assert_allclose(column_units(1e-4 * rows + 7e3)[1], 1e-4 * unit, rtol=1e-5)


def test_only_distances_beyond_reach_widen_and_then_within_it():
    distances = np.array([1.0, -FLOAT16_REACH * 3, np.nan, np.inf, FLOAT16_REACH - 1])
    factor = widening(distances)
    assert factor is not None and factor[[0, 2, 3, 4]].tolist() == [1.0, 1.0, 1.0, 1.0]
    assert np.log2(factor[1]).is_integer() and abs(distances[1] / factor[1]) < FLOAT16_REACH
    assert widening(np.array([0.5, -FLOAT16_REACH + 1, np.nan])) is None
    assert np.isfinite((distances / factor)[[0, 1, 4]].astype(np.float16)).all()
