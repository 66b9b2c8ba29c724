import numpy as np
from hypothesis import given, settings, strategies as st

from stream_jobs.engine.derived import counter_deltas, signals


def test_plain_increases_become_per_second_rates():
    timestamps = np.array([0, 100_000_000, 200_000_000])
    values = np.array([[100.0, 5.0], [110.0, 6.0], [130.0, 7.0]])
    out = signals(timestamps, values, np.array([True, False]))
    np.testing.assert_allclose(out, [[100.0, 6.0], [200.0, 7.0]])


def test_32_bit_wrap_is_unwrapped():
    values = np.array([[2.0**32 - 10], [5.0]])
    assert counter_deltas(values)[0, 0] == 15.0


def test_reset_restarts_from_zero():
    values = np.array([[1_000_000.0], [40.0]])
    assert counter_deltas(values)[0, 0] == 40.0


def test_64_bit_counter_drop_is_a_reset_not_a_wrap():
    values = np.array([[2.0**40], [7.0]])
    assert counter_deltas(values)[0, 0] == 7.0


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=2.0**33, allow_nan=False), min_size=2, max_size=50))
def test_deltas_are_never_negative(series):
    deltas = counter_deltas(np.array(series)[:, None])
    assert (deltas >= 0).all()


def test_inputs_are_not_mutated():
    values = np.array([[5.0], [1.0], [9.0]])
    before = values.copy()
    signals(np.array([0, 10**8, 2 * 10**8]), values, np.array([True]))
    np.testing.assert_array_equal(values, before)
