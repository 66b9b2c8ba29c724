"""The drift-free sampler: ticks on a fixed grid, costs that do not shift it, and overrunning ticks skipped and
counted."""

from producers.sampler import next_tick, run_schedule


class FakeClock:
    """A clock that advances only when slept on or when a tick costs time."""

    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_next_tick_follows_the_grid_and_skips_passed_ticks():
    assert next_tick(0.0, 0.1, 0.05, -1) == 0
    assert next_tick(0.0, 0.1, 0.15, 0) == 1
    assert next_tick(0.0, 0.1, 0.55, 1) == 5


def test_schedule_does_not_drift_when_ticks_cost_time():
    clock = FakeClock()
    due_times = []

    def tick(index, due):
        due_times.append(due)
        clock.now += 0.03  # each tick costs 30 ms

    run_schedule(0.1, tick, lambda: len(due_times) >= 50, clock=clock, sleep=clock.sleep)
    offsets = [due - due_times[0] for due in due_times]
    assert all(abs(offset - i * 0.1) < 1e-9 for i, offset in enumerate(offsets))


def test_overrunning_ticks_are_skipped_and_counted():
    clock = FakeClock()
    indices = []

    def slow_tick(index, due):
        indices.append(index)
        clock.now += 0.25  # longer than two intervals

    stats = run_schedule(0.1, slow_tick, lambda: len(indices) >= 5, clock=clock, sleep=clock.sleep)
    assert indices == [0, 2, 5, 7, 10]
    assert stats.skipped == 6 and stats.ticks == 5
