"""Units for float16 coding: a column's spread, or a small part of its level where it did not vary; a distance
beyond float16's reach widens its column's unit by the power of two that brings it within reach. Rows kept so come
back to a small part of each column's spread, in any units and at any offset, also after a drift far from the
coding."""

import numpy as np

from stream_jobs.engine.half_precision import FLOAT16_REACH, Float16Rows, column_units, widening


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


LEVELS = np.array([0.0, 40.0, 64e9, -3e5, 1e-6, 7.0])
SPREADS = np.array([1.0, 2.0, 4096.0, 10.0, 1e-9, 0.0])  # the last never varies


def _rows(seed: int = 0, windows: int = 40) -> np.ndarray:
    return LEVELS + SPREADS * np.random.default_rng(seed).normal(size=(windows, len(LEVELS)))


def _error_in_spreads(back: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return np.abs(back - rows)[:, :-1] / SPREADS[:-1]


def test_rows_come_back_within_a_small_part_of_each_features_spread():
    rows = _rows()
    kept = Float16Rows(32)
    kept.restart(rows[:20])
    for row in rows[20:]:
        kept.append(row)
    back = kept.windows()
    assert back.shape == (32, 6)
    assert _error_in_spreads(back, rows[-32:]).max() < 2e-3
    assert (back[:, -1] == 7.0).all(), "a feature that never varied comes back exactly"


def test_a_change_of_units_and_offset_changes_nothing_but_units_and_offset():
    rows = _rows(1)
    a, b = 250.0, -7e6  # within float64's digits for every feature
    plain, moved = Float16Rows(32), Float16Rows(32)
    plain.restart(rows)
    moved.restart(a * rows + b)
    assert _error_in_spreads((moved.windows() - b) / a, plain.windows()).max() < 5e-3


def test_a_feature_that_moves_beyond_float16s_reach_widens_its_unit_and_is_not_clipped():
    rows = _rows(2)
    kept = Float16Rows(32)
    kept.restart(rows)
    jumped = rows[0] + 1e6 * np.where(SPREADS > 0, SPREADS, 1.0)
    kept.append(jumped)
    back = kept.windows()
    np.testing.assert_allclose(back[-1], jumped, rtol=1e-3)
    assert _error_in_spreads(back[:-1, :], rows[-31:]).max() < 2e3 * 1e-3, "the others keep float16 of the new unit"


def test_after_a_recode_on_a_drifted_host_new_rows_are_kept_as_precisely_as_before_the_drift():
    rows = _rows(3)
    kept = Float16Rows(32)
    kept.restart(rows)
    drifted = rows + 1e4 * SPREADS  # ten thousand spreads from the coding: float16 keeps a few digits of that
    for row in drifted:
        kept.append(row)
    far_error = _error_in_spreads(kept.windows(), drifted[-32:]).max()
    kept.recode()
    assert _error_in_spreads(kept.windows(), drifted[-32:]).max() <= far_error + 1e-3, "recoding loses nothing"
    for row in drifted[:8]:
        kept.append(row)
    assert _error_in_spreads(kept.windows()[-8:], drifted[:8]).max() < 2e-3 < far_error


def test_missing_features_stay_missing_and_a_restored_fit_codes_from_its_first_row():
    rows = _rows(4)
    rows[5, 2] = np.nan
    kept = Float16Rows(8)
    for row in rows[:8]:
        kept.append(row)
    back = kept.windows()
    assert np.isnan(back[5, 2]) and np.isfinite(np.delete(back, 2, axis=1)).all()
    assert np.nanmax((np.abs(back - rows[:8]) / np.abs(rows[0]))[:, 1:4]) < 1e-3, "to a small part of its level"


def test_what_is_still_to_fill_shrinks_by_a_float16_row_per_row_kept():
    kept = Float16Rows(8)
    assert kept.bytes_to_fill(100) == 8 * 100 * 2
    kept.restart(_rows(5, windows=3))
    assert kept.bytes_to_fill(6) == 5 * 6 * 2


def test_thinning_keeps_every_other_row_from_the_oldest():
    rows = _rows(6, windows=8)
    kept = Float16Rows(8)
    kept.restart(rows)
    kept.thin()
    assert len(kept) == 4 and _error_in_spreads(kept.windows(), rows[::2]).max() < 2e-3


def test_widening_recodes_the_rows_kept_exactly_as_coding_each_row_anew_would():
    rows = _rows(3, 30)
    kept = Float16Rows(64)
    kept.restart(rows[:20])
    unit_before = kept._unit.copy()
    coded_before = list(kept.coded())
    drifted = rows[20].copy()
    drifted[[0, 3]] += SPREADS[[0, 3]] * FLOAT16_REACH * np.array([5.0, -300.0])
    kept.append(drifted)
    factor = (kept._unit / unit_before).astype(np.float64)
    assert factor[[0, 3]].min() > 1 and (factor[[1, 2, 4, 5]] == 1).all()
    expected = [(row / factor).astype(np.float16) for row in coded_before]
    for got, want in zip(list(kept.coded())[:20], expected):
        assert got.dtype == np.float16 and got.tobytes() == want.tobytes()


def test_once_full_each_row_kept_takes_the_place_of_the_oldest_also_through_a_widening():
    """The rows kept are the last `capacity`, oldest first, after the ring has wrapped; a widening then recodes
    every one of them, wherever it lies in the ring, as coding it anew would."""
    rows = _rows(4, 50)
    kept = Float16Rows(8)
    kept.restart(rows[:3])
    for row in rows[3:45]:
        kept.append(row)
    assert len(kept) == 8 and _error_in_spreads(kept.windows(), rows[37:45]).max() < 2e-3
    unit_before, coded_before = kept._unit.copy(), kept.coded()
    drifted = rows[45].copy()
    drifted[2] += SPREADS[2] * FLOAT16_REACH * 9.0
    kept.append(drifted)
    factor = (kept._unit / unit_before).astype(np.float64)
    assert factor[2] > 1 and len(kept) == 8
    assert kept.coded()[:7].tobytes() == (coded_before[1:] / factor).astype(np.float16).tobytes()
    assert kept.bytes_to_fill(6) == 0
