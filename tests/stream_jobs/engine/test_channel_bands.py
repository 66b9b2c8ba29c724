import json

import numpy as np

from stream_jobs.engine.channel_bands import ChannelBands, finite_ratio
from stream_jobs.engine.channel_watch import WatchSettings


def fitted(floor=(0.0, 0.0), limit=3.0) -> ChannelBands:
    """Two columns of unit noise around 10 and −5."""
    stats = np.random.default_rng(0).normal([10.0, -5.0], 1.0, (5000, 2))
    return ChannelBands.fit(stats, np.array(floor), WatchSettings(), limit=limit)


def test_a_column_is_measured_from_its_median_in_its_own_noise():
    bands = fitted()
    assert np.allclose(bands.median, [10.0, -5.0], atol=0.05) and np.allclose(bands.sigma, 1.0, atol=0.1)
    assert np.allclose(bands.z(np.array([13.0, -9.0])), [3.0, -4.0], atol=0.3)


def test_departure_is_in_allowed_distances_and_a_floor_widens_what_is_allowed():
    assert np.allclose(fitted().departure(np.array([13.0, -5.0])), [1.0, 0.0], atol=0.1)
    floored = fitted(floor=(6.0, 0.0))
    assert abs(floored.departure(floored.median + 3.0)[0] - 0.5) < 1e-9


def test_a_column_shows_a_change_beyond_its_noise_and_floor_and_a_rising_only_one_only_when_it_rises():
    bands, rising = fitted(floor=(0.0, 2.5)), np.array([False, True])
    assert bands.shows(np.array([11.5, -5.0]), np.array([0]), rising)
    assert not bands.shows(np.array([10.5, -5.0]), np.array([0]), rising)
    assert not bands.shows(np.array([10.0, -3.0]), np.array([1]), rising), "2 is within the floor of 2.5"
    assert bands.shows(np.array([10.0, -2.0]), np.array([1]), rising)
    assert not bands.shows(np.array([10.0, -8.0]), np.array([1]), rising), "a fall of a rising-only column"


def test_a_column_seen_in_fewer_than_two_windows_has_no_model():
    stats = np.column_stack([np.arange(10.0), np.r_[1.0, [np.nan] * 9]])
    assert np.isnan(ChannelBands.fit(stats, np.zeros(2), WatchSettings()).median[1])


def test_bands_survive_json():
    bands = fitted(floor=(1.0, 0.0))
    again = ChannelBands.from_json(json.loads(json.dumps(bands.to_json())))
    probe = np.array([12.0, -7.0])
    assert np.array_equal(again.departure(probe), bands.departure(probe)) and again.limit == bands.limit


def test_a_ratio_without_a_positive_denominator_is_zero():
    assert finite_ratio(np.array([1.0, 1.0, np.nan]), np.array([0.0, 2.0, 1.0])).tolist() == [0.0, 0.5, 0.0]


def test_bands_carried_to_other_columns_keep_their_model_and_know_nothing_of_new_ones():
    bands = fitted(floor=(1.0, 0.0))
    carried = bands.carried(np.array([1, -1, 0]), np.array([0.0, 2.0, 1.0]))
    assert carried.median[0] == bands.median[1] and carried.median[2] == bands.median[0]
    assert np.isnan(carried.median[1]) and np.isnan(carried.above[1]) and carried.limit == bands.limit
    assert carried.floor.tolist() == [0.0, 2.0, 1.0]
    assert np.allclose(carried.departure(np.array([-5.0, 3.0, 10.0])), 0.0, atol=0.05)
    assert carried.departure(np.array([-5.0, 3.0, 16.0]))[2] > 1.0
