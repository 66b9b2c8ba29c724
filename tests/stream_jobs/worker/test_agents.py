"""What the worker's agents do with a Kafka record: one that cannot be handled becomes a dead letter telling where it
came from, its host and why; a catalog or a frame is stored and handed to the host stage (over embedded
ClickHouse)."""

from types import SimpleNamespace

from faust.types.tuples import Message

from producers.synthetic import synthetic_catalog, synthetic_frames
from schemas.records import DEADLETTER_CODEC
from sinks.landing import open_landing
from stream_jobs.engine.settings import EngineSettings
from stream_jobs.worker.agents import RecordHandler, dead_letter
from stream_jobs.worker.shell import WorkerSettings, WorkerShell

T0 = 1_700_000_000_000_000_000


def an_event(key: bytes | None, value: bytes | None) -> SimpleNamespace:
    """What dead_letter reads of a Faust event: its message (a real one)."""
    return SimpleNamespace(message=Message("reveal.samples", 2, 41, 0.0, 0, [], key, value, None))


def test_a_dead_letter_tells_where_the_record_came_from_its_host_and_why():
    letter = DEADLETTER_CODEC.decode(dead_letter("decode-frame", an_event(b"gpu-node-7", b"\x00garbage"), "not Avro"))
    assert {name: letter[name] for name in ("step", "topic", "partition", "offset", "host", "reason", "payload")} == {
        "step": "decode-frame", "topic": "reveal.samples", "partition": 2, "offset": 41, "host": "gpu-node-7",
        "reason": "not Avro", "payload": b"\x00garbage"}
    assert letter["rejected_at_ns"] > T0


def test_a_record_without_a_key_or_value_or_with_a_key_that_is_not_utf8_still_makes_a_dead_letter():
    assert DEADLETTER_CODEC.decode(dead_letter("decode-catalog", an_event(b"\xffh", b"x"), "bad"))["host"] == "\ufffdh"
    letter = DEADLETTER_CODEC.decode(dead_letter("decode-catalog", an_event(None, None), "empty"))
    assert (letter["host"], letter["payload"]) == ("", b"")


def test_a_catalog_and_its_frames_are_stored_and_handed_to_the_host_stage(chdb_dsn, database):
    shell = WorkerShell(WorkerSettings("127.0.0.1:1", engine=EngineSettings(warmup_s=10)),
                        lambda: open_landing(chdb_dsn, database))
    handler = RecordHandler(shell, None, None, None, None, None)
    catalog = synthetic_catalog("agent-host")
    try:
        handler.take_catalog(catalog)
        frames = synthetic_frames(catalog, T0, 60)
        outputs = [handler.take_frames(frames[first:first + 10]) for first in range(0, 60, 10)]
        assert shell.stage.counters.frames == 60 and sum(len(output.window_rows) for output in outputs) > 0
        assert shell.store.pending_rows() == 61, "the catalog and every frame wait for ClickHouse"
    finally:
        shell.close(close_incidents=False)
