"""Which consumed Kafka records may have their offsets committed, and which records may be processed at all.

A frame is released once its host's state no longer needs it (windows in progress, a baseline being learned, an
open incident: see HostStage.needed_since_ns) and once the rows it produced are in ClickHouse. Kafka commits one
offset per partition, so a record is acknowledged only when every record before it in its partition is released
too: hosts sharing a partition start again from the earliest need among them (the others judge some stored windows
again, identically, but may see the tail of an incident that ended in that span and announce it afresh). Records
are (partition, offset) pairs, kept in flat integer arrays; `max_held_s` bounds how far back a host may hold its
frames.

`ReadCursors` keeps each assigned partition read in offset order from where the last owner committed: a record past
the next expected offset means records in between were skipped (a fetch from before a rebalance, a consumer that
dropped what it took for duplicates), so the partition is read again from the expected offset instead of losing
them. Compacted topics are exempt: compaction leaves gaps on purpose.
"""

from __future__ import annotations

import enum
from array import array
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Hashable


class Int64Queue:
    """A first-in first-out queue of 64-bit integers in one flat array (8 bytes each, where a deque of Python
    ints costs ~36): a partition may wait minutes behind one host's open incident, with every record after it
    still to be released."""

    __slots__ = ("_values", "_start")

    def __init__(self):
        self._values = array("q")
        self._start = 0

    def __len__(self) -> int:
        return len(self._values) - self._start

    def append(self, value: int) -> None:
        self._values.append(value)

    def first(self) -> int:
        return self._values[self._start]

    def last(self) -> int:
        return self._values[-1]

    def pop_first(self) -> int:
        value = self._values[self._start]
        self._start += 1
        if self._start >= 4096 and 2 * self._start >= len(self._values):
            del self._values[:self._start]
            self._start = 0
        return value


class HeldFrames:
    """One host's frames in one partition that its state still needs: instants and offsets, in arrival order."""

    __slots__ = ("instants", "offsets")

    def __init__(self):
        self.instants, self.offsets = Int64Queue(), Int64Queue()

    def __len__(self) -> int:
        return len(self.offsets)

    def append(self, instant_ns: int, offset: int) -> None:
        self.instants.append(instant_ns)
        self.offsets.append(offset)

    def release_before(self, cutoff_ns: int) -> None:
        while self.instants and self.instants.first() < cutoff_ns:
            self.instants.pop_first()
            self.offsets.pop_first()


class ReleaseTracker:
    """Consumed offsets in partition order, the hosts' holds on them, and the records ready to release after a
    flush. Records are (partition, offset) pairs."""

    def __init__(self, max_held_s: float = 300.0):
        self.max_held_ns = round(max_held_s * 1e9)
        self._unreleased: dict[Hashable, Int64Queue] = defaultdict(Int64Queue)
        self._holds: dict[str, dict[Hashable, HeldFrames]] = defaultdict(dict)  # host → partition → frames
        self._ready: list[tuple[Hashable, int]] = []

    def consumed(self, partition: Hashable, offset: int) -> None:
        """Register a record (records of a partition arrive in offset order); unless a host holds it next, it is
        released after the next flush."""
        self._unreleased[partition].append(offset)

    def hold(self, host: str, partition: Hashable, timestamp_ns: int, offset: int) -> None:
        """A frame record whose results are queued for storage and which the host's state may still need."""
        frames = self._holds[host].get(partition)
        if frames is None:
            frames = self._holds[host][partition] = HeldFrames()
        frames.append(timestamp_ns, offset)

    def advance(self, host: str, needed_since_ns: int | None) -> None:
        """Mark the host's frames older than `needed_since_ns` (all of them for None) as no longer needed."""
        for frames in self._holds.get(host, {}).values():
            if frames:
                newest = frames.instants.last()
                cutoff = newest + 1 if needed_since_ns is None else needed_since_ns
                frames.release_before(max(cutoff, newest - self.max_held_ns))

    def take_ready(self) -> list[tuple[Hashable, int]]:
        """The records to release once the rows queued so far are stored: each partition's offsets before the
        oldest frame a host still holds there."""
        ready, self._ready = self._ready, []
        limits: dict[Hashable, int] = {}
        for partitions in self._holds.values():
            for partition, frames in partitions.items():
                if frames:
                    limits[partition] = min(limits.get(partition, frames.offsets.first()), frames.offsets.first())
        for partition, offsets in self._unreleased.items():
            limit = limits.get(partition)
            while offsets and (limit is None or offsets.first() < limit):
                ready.append((partition, offsets.pop_first()))
        return ready

    def put_back(self, records: list[tuple[Hashable, int]]) -> None:
        """Records whose rows could not be stored: released after a later flush."""
        self._ready[:0] = records

    def forget_all(self) -> None:
        """Partitions were revoked: drop every record without releasing it; they will be consumed again."""
        self._unreleased.clear()
        self._holds.clear()
        self._ready.clear()

    def held(self) -> int:
        """Frames some host's state still needs."""
        return sum(len(frames) for partitions in self._holds.values() for frames in partitions.values())


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

    def positions(self) -> dict[Hashable, int]:
        """The next offset each positioned partition must deliver: with the log's end, the consumer's lag."""
        return dict(self._expected)

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
