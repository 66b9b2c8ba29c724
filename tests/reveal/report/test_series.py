"""Shaping stored rows for the charts: buckets, merged intervals, counter rates across resets, axis scales."""

import doctest
import math

from reveal.report import series
from reveal.report.series import bucket_ns, counter_rates, merge_intervals, wants_log_scale


def test_docstring_examples_hold():
    assert doctest.testmod(series).failed == 0


def test_a_day_of_frames_fits_in_the_point_budget():
    day_ns = 86_400 * 10**9
    assert day_ns // bucket_ns(0, day_ns) <= series.MAX_POINTS
    assert bucket_ns(5, 5) == 1


def test_intervals_merge_only_when_they_touch_or_nearly_do():
    assert merge_intervals([]) == []
    assert merge_intervals([(0, 10), (11, 20)]) == [(0, 10), (11, 20)]
    assert merge_intervals([(0, 10), (11, 20)], gap_ns=1) == [(0, 20)]
    assert merge_intervals([(0, 30), (5, 10)]) == [(0, 30)]


def test_counter_rates_survive_a_reset_and_an_empty_series():
    times, rates = counter_rates([0, 10**9, 2 * 10**9, 3 * 10**9], [100.0, 300.0, 50.0, 150.0])
    assert times == [10**9, 2 * 10**9, 3 * 10**9] and rates == [200.0, 50.0, 100.0]
    assert counter_rates([0], [1.0]) == ([], [])
    _, same_instant = counter_rates([0, 0], [1.0, 2.0])
    assert math.isnan(same_instant[0])


def test_log_scale_only_for_positive_values_spanning_decades():
    assert wants_log_scale([1.0, 50.0]) is False and wants_log_scale([-1.0, 500.0]) is False
    assert wants_log_scale([0.01, math.nan, 50.0]) is True and wants_log_scale([]) is False
