"""A window carries Reveal's own load when the agent's counter of command seconds rose in it or shortly before."""

from __future__ import annotations

import numpy as np

from schemas.channels import OWN_COMMANDS_SECONDS
from stream_jobs.engine.own_activity import OWN_ACTIVITY_SETTLE_S, OwnActivity

NAMES = ("cpu.busy.cpu0", OWN_COMMANDS_SECONDS)
S = 1_000_000_000


def window(start_s: float, counter: list[float]) -> tuple[np.ndarray, np.ndarray, int]:
    times = np.array([round((start_s + 0.5 * i) * S) for i in range(len(counter))], dtype=np.int64)
    return times, np.column_stack([np.full(len(counter), 40.0), counter]), round(start_s * S)


def test_a_rise_marks_the_window_and_the_settling_time_after_it():
    own = OwnActivity(NAMES)
    assert not own.in_window(*window(0.0, [0, 0, 0, 0]))
    assert own.in_window(*window(1.0, [0, 0, 0.4, 0.9]))
    assert own.in_window(*window(1.0 + OWN_ACTIVITY_SETTLE_S, [0.9] * 4))
    assert not own.in_window(*window(3.0 + OWN_ACTIVITY_SETTLE_S, [0.9] * 4))


def test_hosts_without_the_counter_and_gaps_in_it_mark_nothing():
    assert not OwnActivity(("cpu.busy.cpu0",)).in_window(np.array([0, S]), np.ones((2, 1)), 0)
    own = OwnActivity(NAMES)
    assert not own.in_window(*window(0.0, [np.nan, 1.0, np.nan, 1.0]))
