"""The backoff schedule between attempts at an unavailable ClickHouse."""

import pytest

from stream_jobs.worker.backoff import Backoff


def test_delays_double_up_to_the_ceiling_and_a_success_starts_over():
    backoff = Backoff(first_s=0.5, max_s=3.0)
    assert [backoff.failed(now=10.0) for _ in range(4)] == [0.5, 1.0, 2.0, 3.0]
    assert backoff.failing and backoff.failing_since == 10.0 and not backoff.due(12.9) and backoff.due(13.0)
    backoff.succeeded()
    assert not backoff.failing and backoff.due(0.0) and backoff.failed(now=20.0) == 0.5


def test_nonsensical_schedules_are_refused():
    with pytest.raises(ValueError, match="first 5 s, max 1 s"):
        Backoff(first_s=5, max_s=1)
