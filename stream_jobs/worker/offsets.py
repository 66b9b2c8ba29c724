"""Where the worker reads each partition from, and how a released record's offset reaches Faust's commits.

Each partition is processed in offset order from where its last owner committed: a record that arrives past the
next expected offset (a fetch from before a rebalance) makes the worker read the partition again from that offset
rather than skip what lies between (stream_jobs/worker/offset_releases.py keeps the cursors).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import faust

from stream_jobs.worker.offset_releases import Verdict
from stream_jobs.worker.shell import WorkerShell

log = logging.getLogger(__name__)


@dataclass(eq=False, slots=True, weakref_slot=True)
class Delivered:
    """A released record's position, all that Faust's `Consumer.ack` reads of a message (it tracks unacknowledged
    messages in a weak set, hence the weak reference); made when the record is released, while what is held until
    then is two integers per record (stream_jobs/worker/offset_releases.py)."""

    topic: str
    tp: object
    offset: int
    acked: bool = False


class PartitionOffsets:
    """Seeks, acknowledgements and log ends for the app's consumer, kept in step with the shell's read cursors."""

    def __init__(self, app: faust.App, shell: WorkerShell):
        self.app, self.shell = app, shell

    def acknowledge(self, tp, offset: int) -> None:
        """Tell Faust a released record is done with, so that its offset is committed once those before it are."""
        self.app.consumer.ack(Delivered(tp.topic, tp, offset))

    def highwater(self, tp) -> int | None:
        """The partition's log end as the consumer last fetched it (None before its first fetch)."""
        try:
            return self.app.consumer.highwater(tp)
        except Exception:  # not started, or the partition no longer assigned: no figure rather than a failed scrape
            return None

    async def ready_to_process(self, message) -> bool:
        """Whether this record is the next one its partition owes the stage; after a gap, read again from it."""
        cursors = self.shell.cursors
        verdict = cursors.judge(message.tp, message.topic, message.offset)
        if verdict is Verdict.GAP:
            await self.read_again(message.tp, message.offset)
        if verdict is not Verdict.PROCESS:
            return False
        generation = cursors.generation
        await self.shell.wait_for_room()
        return generation == cursors.generation  # not revoked while it waited for storage

    async def read_again(self, tp, arrived: int) -> None:
        """Seek the partition back to the next expected offset (or to the log's start if that has expired)."""
        cursors = self.shell.cursors
        if not cursors.should_seek(tp, time.monotonic()):
            return
        generation, expected = cursors.generation, cursors.expected(tp)
        earliest = (await self.app.consumer.earliest_offsets(tp)).get(tp, expected)
        if generation != cursors.generation:
            return
        if earliest > expected:
            log.warning("%s[%d]: records %d to %d expired from Kafka before they were read; reading on from %d",
                        tp.topic, tp.partition, expected, earliest - 1, earliest)
            cursors.start(tp, earliest)
            cursors.should_seek(tp, time.monotonic())
            expected = earliest
        self.shell.counters.rereads += 1
        log.info("%s[%d]: record %d arrived while %d was expected; reading again from %d",
                 tp.topic, tp.partition, arrived, expected, expected)
        await self.app.consumer.seek(tp, expected)

    async def position_partitions(self, assigned) -> None:
        """Read every assigned partition from its committed offset, or from the log's start if none is."""
        cursors, consumer = self.shell.cursors, self.app.consumer
        cursors.reset()
        generation = cursors.generation
        committed = await consumer.seek_to_committed()
        starts = {tp: offset for tp, offset in committed.items() if offset is not None and offset >= 0}
        missing = [tp for tp in assigned if tp not in starts]
        if missing:
            starts.update(await consumer.earliest_offsets(*missing))
        if generation != cursors.generation:
            return
        for tp in assigned:
            cursors.start(tp, starts[tp])
            await consumer.seek(tp, starts[tp])

    async def seek_stalled(self) -> None:
        """Seek again the partitions where nothing arrived since they were read again."""
        for tp, offset in self.shell.cursors.stalled(time.monotonic()):
            log.debug("%s[%d]: nothing arrived since reading again from %d; seeking again", tp.topic, tp.partition,
                      offset)
            await self.app.consumer.seek(tp, offset)
