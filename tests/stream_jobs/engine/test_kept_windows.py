"""KeptWindows answers what two separate copies would: a history with departed columns blanked, and the recent
judged windows as they were, each within a small part of a window's step from the one before, for any sequence of
windows; a level shift costs precision on the window that makes it, not on those after it."""

from collections import deque

import numpy as np
from hypothesis import given, settings, strategies as st

from stream_jobs.engine.kept_windows import KeptWindows


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12), st.integers(1, 12), st.integers(0, 8), st.integers(0, 30), st.integers(0, 2**31))
def test_one_copy_answers_what_a_history_and_a_recent_copy_would(history_rows, recent_rows, baseline_rows, judged,
                                                                 seed):
    rng = np.random.default_rng(seed)
    columns = 11
    kept = KeptWindows(history_rows, recent_rows)
    history, recent = deque(maxlen=history_rows), deque(maxlen=recent_rows)
    baseline = rng.normal(size=(baseline_rows, columns)) * 1e6
    kept.seed(baseline)
    history.extend(baseline)
    for _ in range(judged):
        values, departing = rng.normal(size=columns) * 1e6, rng.random(columns) < 0.3
        kept.remember(values, departing)
        history.append(np.where(departing, np.nan, values))
        recent.append(values)
    assert (kept.history_count, kept.recent_count) == (len(history), len(recent))
    as_rows = lambda rows: np.asarray(rows, dtype=np.float64).reshape(-1, columns)
    within_a_step = dict(rtol=0, atol=5e3)  # float16 of steps of a few 1e6: 2^-11 of each
    np.testing.assert_allclose(kept.history().reshape(-1, columns), as_rows(history), **within_a_step)
    np.testing.assert_allclose(kept.recent().reshape(-1, columns), as_rows(recent), **within_a_step)


def test_a_window_with_nothing_departing_keeps_no_departure_bits_and_the_values_once():
    kept = KeptWindows(history_rows=200, recent_rows=120)
    kept.remember(np.arange(3000.0), np.zeros(3000, dtype=bool))
    kept.remember(np.arange(3000.0), np.arange(3000) == 7)
    assert np.isnan(kept.history()[1, 7]) and not np.isnan(kept.history()[0]).any()
    assert kept.recent()[1, 7] == 7.0
    assert kept.bytes_once_full(3000) == 200 * 3000 * 2


def test_after_a_level_shift_of_a_million_spreads_the_new_level_comes_back_as_exact_as_the_old():
    rng = np.random.default_rng(5)
    level, spread = np.array([40.0, 64e9]), np.array([1.0, 4096.0])
    kept = KeptWindows(history_rows=144, recent_rows=120)
    kept.seed(level + spread * rng.normal(size=(12, 2)))
    shifted = level + 1e6 * spread + spread * rng.normal(size=(60, 2))
    for row in shifted:
        kept.remember(row, np.ones(2, dtype=bool))
    error_in_spreads = np.abs(kept.recent() - shifted) / spread
    assert error_in_spreads[2:].max() < 2e-3, "rows after the shift are kept to a small part of their own noise"
    assert error_in_spreads[1].max() < 0.5, "the next row corrects the shift's rounding, to 2^-11 of it"
    assert np.all(np.isnan(kept.history()[-60:])) and np.isfinite(kept.history()[:12]).all()


def test_a_value_unknown_in_one_window_stays_unknown_and_the_rest_continue_from_the_last_known():
    kept = KeptWindows(history_rows=5, recent_rows=5)
    rows = np.array([[1.0, 10.0], [2.0, np.nan], [3.0, 12.0], [4.0, 13.0], [5.0, np.nan], [6.0, 15.0], [7.0, 16.0]])
    for row in rows:
        kept.remember(row, np.zeros(2, dtype=bool))
    np.testing.assert_allclose(kept.recent(), rows[-5:], rtol=1e-3)
    assert np.isnan(kept.recent()[2, 1]) and np.isfinite(kept.recent()[[0, 1, 3, 4], 1]).all()
