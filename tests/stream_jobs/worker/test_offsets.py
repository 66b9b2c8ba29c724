"""Where the worker reads each partition from (a real shell over embedded ClickHouse, a Faust app not started): only
the record a partition owes the stage next is processed, a compacted topic's gaps are no gap, a log end is None before
the consumer has fetched, and a released record's position is all Faust's acknowledgement keeps, weakly."""

import asyncio
import weakref

import pytest
from faust.types import TP
from faust.types.tuples import Message

from sinks.landing import open_landing
from stream_jobs.worker.offsets import Delivered, PartitionOffsets
from stream_jobs.worker.shell import WorkerSettings, WorkerShell
from stream_jobs.worker.transport import PromptApp


def a_message(topic: str, partition: int, offset: int) -> Message:
    return Message(topic, partition, offset, 0.0, 0, [], b"h", b"", None)


@pytest.fixture
def shell(chdb_dsn, database):
    shell = WorkerShell(WorkerSettings("127.0.0.1:1"), lambda: open_landing(chdb_dsn, database))
    yield shell
    shell.close(close_incidents=False)


def test_only_the_record_a_partition_owes_the_stage_next_is_processed(shell):
    shell.cursors.start(TP("reveal.samples", 0), 10)
    shell.cursors.start(TP("reveal.catalog", 0), 10)
    arriving = [a_message("reveal.samples", 0, 10), a_message("reveal.samples", 0, 9),
                a_message("reveal.samples", 1, 0), a_message("reveal.catalog", 0, 25)]

    async def judged():
        offsets = PartitionOffsets(PromptApp("reveal-offsets-test", broker="kafka://127.0.0.1:1", web_enabled=False,
                                             store="memory://"), shell)
        return [await offsets.ready_to_process(message) for message in arriving], offsets.highwater(arriving[0].tp)

    verdicts, log_end = asyncio.run(judged())
    assert verdicts == [True, False, False, True], "next, already read, not ours, past a compacted topic's gap"
    assert log_end is None


def test_a_released_records_position_is_kept_weakly_and_nothing_else():
    delivered = Delivered("reveal.samples", TP("reveal.samples", 0), 5)
    assert weakref.ref(delivered)() is delivered and not delivered.acked
    assert not hasattr(delivered, "__dict__")
