"""Which consumed Kafka records may have their offsets committed, and which records may be processed at all.

A frame is released once its host's state no longer needs it (windows in progress, a baseline being learned, an
open incident: see HostStage.needed_since_ns) and once the rows it produced are in ClickHouse. Kafka commits one
offset per partition, so a record is acknowledged only when every record before it in its partition is released
too: hosts sharing a partition start again from the earliest need among them (the others judge some stored windows
again, identically, but may see the tail of an incident that ended in that span and announce it afresh). Records
are opaque here (in the worker, callables that acknowledge a Kafka message); `max_held_s` bounds how far back a host
may hold its frames.

`ReadCursors` keeps each assigned partition read in offset order from where the last owner committed: a record past
the next expected offset means records in between were skipped (a fetch from before a rebalance, a consumer that
dropped what it took for duplicates), so the partition is read again from the expected offset instead of losing
them. Compacted topics are exempt: compaction leaves gaps on purpose.
"""

from __future__ import annotations

import enum
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any, Hashable


@dataclass(eq=False)
class Consumed:
    """One consumed record and whether nothing needs it any more."""
    record: Any
    released: bool = False


class ReleaseTracker:
    """Consumed records in partition order, the hosts' holds on them, and the records ready to release after a
    flush."""

    def __init__(self, max_held_s: float = 300.0):
        self.max_held_ns = round(max_held_s * 1e9)
        self._by_partition: dict[Hashable, deque[Consumed]] = defaultdict(deque)
        self._by_host: dict[str, deque[tuple[int, Consumed]]] = defaultdict(deque)
        self._ready: list[Any] = []

    def consumed(self, partition: Hashable, record: Any) -> Consumed:
        """Register a record in its partition's order (records arrive in offset order); hold or release it next."""
        entry = Consumed(record)
        self._by_partition[partition].append(entry)
        return entry

    def hold(self, host: str, timestamp_ns: int, entry: Consumed) -> None:
        """A frame record whose results are queued for storage and which the host's state may still need."""
        self._by_host[host].append((timestamp_ns, entry))

    @staticmethod
    def done(entry: Consumed) -> None:
        """A record nothing in memory depends on (a catalog, a dead letter): released after the next flush."""
        entry.released = True

    def advance(self, host: str, needed_since_ns: int | None) -> None:
        """Mark the host's frames older than `needed_since_ns` (all of them for None) as no longer needed."""
        held = self._by_host[host]
        if held:
            newest = held[-1][0]
            cutoff = newest + 1 if needed_since_ns is None else needed_since_ns
            cutoff = max(cutoff, newest - self.max_held_ns)
            while held and held[0][0] < cutoff:
                held.popleft()[1].released = True

    def take_ready(self) -> list[Any]:
        """The records to release once the rows queued so far are stored: each partition's released prefix."""
        ready, self._ready = self._ready, []
        for queue in self._by_partition.values():
            while queue and queue[0].released:
                ready.append(queue.popleft().record)
        return ready

    def put_back(self, records: list[Any]) -> None:
        """Records whose rows could not be stored: released after a later flush."""
        self._ready[:0] = records

    def forget_all(self) -> None:
        """Partitions were revoked: drop every record without releasing it; they will be consumed again."""
        self._by_partition.clear()
        self._by_host.clear()
        self._ready.clear()

    def held(self) -> int:
        return sum(not entry.released for queue in self._by_partition.values() for entry in queue)


class Verdict(enum.Enum):
    PROCESS = "process"
    NOT_POSITIONED = "not positioned"  # not (yet) ours in this assignment: its new start is being looked up
    ALREADY_READ = "already read"      # before the next expected offset: a repeat of what was processed
    GAP = "gap"                        # past the next expected offset: records in between would be lost


@dataclass
class ReadCursors:
    """The next offset each assigned partition must deliver, per assignment; pure, the shell seeks."""
    compacted_topics: frozenset[str] = frozenset()
    reseek_after_s: float = 1.0
    generation: int = 0
    _expected: dict[Hashable, int] = field(default_factory=dict)
    _sought_at: dict[Hashable, float] = field(default_factory=dict)

    def reset(self) -> None:
        """Partitions were revoked: nothing is positioned until the next assignment looks its starts up."""
        self.generation += 1
        self._expected.clear()
        self._sought_at.clear()

    def start(self, partition: Hashable, offset: int) -> None:
        """The partition is ours and is read from `offset` (the committed offset, or the log's start)."""
        self._expected[partition] = offset
        self._sought_at.pop(partition, None)

    def expected(self, partition: Hashable) -> int | None:
        return self._expected.get(partition)

    def judge(self, partition: Hashable, topic: str, offset: int) -> Verdict:
        expected = self._expected.get(partition)
        if expected is None:
            return Verdict.NOT_POSITIONED
        if offset < expected:
            return Verdict.ALREADY_READ
        if offset > expected and topic not in self.compacted_topics:
            return Verdict.GAP
        return Verdict.PROCESS

    def processed(self, partition: Hashable, offset: int) -> None:
        if partition in self._expected:
            self._expected[partition] = offset + 1
            self._sought_at.pop(partition, None)

    def should_seek(self, partition: Hashable, now: float) -> bool:
        """After a gap: seek again unless a seek for this partition is recent (its stale records still arrive)."""
        last = self._sought_at.get(partition)
        if last is not None and now - last < self.reseek_after_s:
            return False
        self._sought_at[partition] = now
        return True

    def stalled(self, now: float) -> list[tuple[Hashable, int]]:
        """Partitions sought after a gap that delivered nothing since: (partition, offset) to seek again now."""
        due = [partition for partition, at in self._sought_at.items()
               if now - at >= self.reseek_after_s and partition in self._expected]
        for partition in due:
            self._sought_at[partition] = now
        return [(partition, self._expected[partition]) for partition in due]
