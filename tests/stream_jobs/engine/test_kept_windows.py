"""KeptWindows answers exactly what two separate copies would: a history with departed columns blanked, and the
recent judged windows as they were, each float32, for any sequence of windows."""

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
    history.extend(baseline.astype(np.float32))
    for _ in range(judged):
        values, departing = rng.normal(size=columns) * 1e6, rng.random(columns) < 0.3
        kept.remember(values, departing)
        history.append(np.where(departing, np.nan, values).astype(np.float32))
        recent.append(values.astype(np.float32))
    assert (kept.history_count, kept.recent_count) == (len(history), len(recent))
    as_rows = lambda rows: np.asarray(rows, dtype=np.float64).reshape(-1, columns)
    np.testing.assert_array_equal(kept.history().reshape(-1, columns), as_rows(history))
    np.testing.assert_array_equal(kept.recent().reshape(-1, columns), as_rows(recent))


def test_a_window_with_nothing_departing_keeps_no_departure_bits_and_the_values_once():
    kept = KeptWindows(history_rows=200, recent_rows=120)
    kept.remember(np.arange(3000.0), np.zeros(3000, dtype=bool))
    kept.remember(np.arange(3000.0), np.arange(3000) == 7)
    assert np.isnan(kept.history()[1, 7]) and not np.isnan(kept.history()[0]).any()
    assert kept.recent()[1, 7] == 7.0
    assert kept.bytes_once_full(3000) == 200 * 3000 * 4
