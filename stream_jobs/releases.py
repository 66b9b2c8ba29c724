"""Which consumed Kafka records may have their offsets committed: only those whose results are stored and that no
state in memory still depends on, so a worker killed at any instant loses nothing when it starts again.

A frame is released once its host's state no longer needs it (windows in progress, a baseline being learned, an
open incident: see HostStage.needed_since_ns) and once the rows it produced are in ClickHouse. Records are opaque
here (Faust events in the worker); `max_held_s` bounds how far back a host may hold its frames. Offsets are per
partition, so hosts sharing a partition start again from the earliest need among them: the others judge some stored
windows again, identically, but may see the tail of an incident that ended in that span and announce it afresh.
"""

from __future__ import annotations

from collections import defaultdict, deque
from typing import Any


class ReleaseTracker:
    """Per-host queues of consumed records in arrival order, and the records ready to release after a flush."""

    def __init__(self, max_held_s: float = 300.0):
        self.max_held_ns = round(max_held_s * 1e9)
        self._held: dict[str, deque[tuple[int, Any]]] = defaultdict(deque)
        self._ready: list[Any] = []

    def hold(self, host: str, timestamp_ns: int, record: Any) -> None:
        """A frame record whose results are queued for storage."""
        self._held[host].append((timestamp_ns, record))

    def done(self, record: Any) -> None:
        """A record nothing in memory depends on (a catalog, a dead letter): released after the next flush."""
        self._ready.append(record)

    def advance(self, host: str, needed_since_ns: int | None) -> None:
        """Make the host's frames older than `needed_since_ns` (all of them for None) ready for release."""
        held = self._held[host]
        if held:
            newest = held[-1][0]
            cutoff = newest + 1 if needed_since_ns is None else needed_since_ns
            cutoff = max(cutoff, newest - self.max_held_ns)
            while held and held[0][0] < cutoff:
                self._ready.append(held.popleft()[1])

    def take_ready(self) -> list[Any]:
        """The records to release once the rows queued so far are stored."""
        ready, self._ready = self._ready, []
        return ready

    def put_back(self, records: list[Any]) -> None:
        """Records whose rows could not be stored: released after a later flush."""
        self._ready[:0] = records

    def forget(self, host: str) -> None:
        """Drop the host's held frames without releasing them: they will be consumed again."""
        self._held.pop(host, None)

    def held(self) -> int:
        return sum(len(queue) for queue in self._held.values())
