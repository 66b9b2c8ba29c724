"""The rolling baseline keeps rows in float16 against their own mean and spread: what comes back is the row to a
small part of each feature's spread, in any units and at any offset, also after a drift far from the coding."""

import numpy as np

from stream_jobs.engine.rolling_baseline import RollingBaseline

LEVELS = np.array([0.0, 40.0, 64e9, -3e5, 1e-6, 7.0])
SPREADS = np.array([1.0, 2.0, 4096.0, 10.0, 1e-9, 0.0])  # the last never varies


def _rows(seed: int = 0, windows: int = 40) -> np.ndarray:
    return LEVELS + SPREADS * np.random.default_rng(seed).normal(size=(windows, len(LEVELS)))


def _error_in_spreads(back: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return np.abs(back - rows)[:, :-1] / SPREADS[:-1]


def test_rows_come_back_within_a_small_part_of_each_features_spread():
    rows = _rows()
    kept = RollingBaseline(32)
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
    plain, moved = RollingBaseline(32), RollingBaseline(32)
    plain.restart(rows)
    moved.restart(a * rows + b)
    assert _error_in_spreads((moved.windows() - b) / a, plain.windows()).max() < 5e-3


def test_a_feature_that_moves_beyond_float16s_reach_widens_its_unit_and_is_not_clipped():
    rows = _rows(2)
    kept = RollingBaseline(32)
    kept.restart(rows)
    jumped = rows[0] + 1e6 * np.where(SPREADS > 0, SPREADS, 1.0)
    kept.append(jumped)
    back = kept.windows()
    np.testing.assert_allclose(back[-1], jumped, rtol=1e-3)
    assert _error_in_spreads(back[:-1, :], rows[-31:]).max() < 2e3 * 1e-3, "the others keep float16 of the new unit"


def test_after_a_recode_on_a_drifted_host_new_rows_are_kept_as_precisely_as_before_the_drift():
    rows = _rows(3)
    kept = RollingBaseline(32)
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
    kept = RollingBaseline(8)
    for row in rows[:8]:
        kept.append(row)
    back = kept.windows()
    assert np.isnan(back[5, 2]) and np.isfinite(np.delete(back, 2, axis=1)).all()
    assert np.nanmax((np.abs(back - rows[:8]) / np.abs(rows[0]))[:, 1:4]) < 1e-3, "to a small part of its level"


def test_what_is_still_to_fill_shrinks_by_a_float16_row_per_row_kept():
    kept = RollingBaseline(8)
    assert kept.bytes_to_fill(100) == 8 * 100 * 2
    kept.restart(_rows(5, windows=3))
    assert kept.bytes_to_fill(6) == 5 * 6 * 2
