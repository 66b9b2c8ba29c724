"""A stretch of learned windows far from the rest of the learning is found and told; noise, a blip shorter than a
departure counts, a move within a channel's floor and the agent's own channels are not."""

import re

import numpy as np

from stream_jobs.engine.learning_doubt import stretch_apart

NAMES = ("cpu.user.all", "sock.tcp_tw", "agent.rss_bytes")
FLOORS = np.array([5.0, 2.0, np.inf])


def learned(windows: int = 50, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.column_stack([10.0 + rng.normal(0, 1.0, windows), np.zeros(windows),
                            2e8 + rng.normal(0, 1e6, windows)])


def test_a_burst_held_within_the_learning_is_found_with_where_and_how_far():
    means = learned()
    means[20:40, 0] += 90.0
    stretch = stretch_apart(means, FLOORS, NAMES, min_windows=4)
    assert (stretch.channel, stretch.first_window, stretch.windows) == ("cpu.user.all", 20, 20)
    assert 99.0 < stretch.level < 101.0 and 9.0 < stretch.typical < 11.0
    assert re.match(r"the baseline may hold an anomaly: cpu.user.all was 100(\.\d)? for 10 s from 10 s into the "
                    r"learning, against 10(\.\d+)? over the rest of it", stretch.told(0.5)), stretch.told(0.5)


def test_noise_a_short_blip_a_move_within_the_floor_and_the_agents_own_channels_are_not_doubted():
    assert stretch_apart(learned(), FLOORS, NAMES, min_windows=4) is None
    blip = learned()
    blip[10:13, 0] += 90.0
    assert stretch_apart(blip, FLOORS, NAMES, min_windows=4) is None
    within_floor = learned()
    within_floor[10:30, 1] = 1.0
    assert stretch_apart(within_floor, FLOORS, NAMES, min_windows=4) is None
    own = learned()
    own[10:30, 2] += 5e8
    assert stretch_apart(own, FLOORS, NAMES, min_windows=4) is None


def test_too_few_windows_to_tell_a_stretch_from_the_rest_say_nothing():
    means = learned(windows=6)
    means[:4, 0] += 90.0
    assert stretch_apart(means, FLOORS, NAMES, min_windows=4) is None
