"""Exponential backoff between attempts at an unavailable store: the delay doubles up to a ceiling, and one
success starts it over. The clock is passed in, so the schedule is plain arithmetic.

>>> backoff = Backoff(first_s=0.5, max_s=4.0)
>>> [backoff.failed(now=0.0) for _ in range(5)]
[0.5, 1.0, 2.0, 4.0, 4.0]
>>> backoff.due(now=3.9), backoff.due(now=4.0)
(False, True)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Backoff:
    first_s: float = 0.5
    max_s: float = 30.0
    factor: float = 2.0
    failures: int = 0
    next_attempt_at: float = 0.0
    failing_since: float | None = None

    def __post_init__(self):
        if not 0 < self.first_s <= self.max_s or self.factor < 1:
            raise ValueError(f"backoff first {self.first_s} s, max {self.max_s} s and factor {self.factor} must "
                             f"satisfy 0 < first ≤ max and factor ≥ 1")

    def due(self, now: float) -> bool:
        """Whether the next attempt may run now."""
        return now >= self.next_attempt_at

    def failed(self, now: float) -> float:
        """Record a failed attempt; returns the delay before the next one."""
        if self.failing_since is None:
            self.failing_since = now
        delay = min(self.first_s * self.factor ** self.failures, self.max_s)
        self.failures += 1
        self.next_attempt_at = now + delay
        return delay

    def succeeded(self) -> None:
        self.failures, self.next_attempt_at, self.failing_since = 0, 0.0, None

    @property
    def failing(self) -> bool:
        return self.failing_since is not None
