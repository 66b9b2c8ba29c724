"""`reveal worker`: when a bounded run is done (its duration reached, or its input idle while storage keeps up), and
the defaults a worker starts with."""

import time
from types import SimpleNamespace

from reveal.cli import build_parser
from reveal.cli.worker import _done
from stream_jobs.worker.backoff import Backoff


def shell(last_record_ago_s: float | None, storage_failing: bool = False, pending_rows: int = 0,
          unread: dict | None = None) -> SimpleNamespace:
    """What `_done` reads of a worker shell: when the last record came, the storage backoff, the rows queued and
    the records not read yet."""
    backoff = Backoff()
    if storage_failing:
        backoff.failed(time.monotonic())
    last = None if last_record_ago_s is None else time.monotonic() - last_record_ago_s
    return SimpleNamespace(last_record_at=last, backoff=backoff,
                           store=SimpleNamespace(pending_rows=lambda: pending_rows),
                           unread_records=lambda: dict(unread or {}))


def test_a_run_ends_at_its_duration_or_once_its_input_is_idle():
    now = time.monotonic()
    assert _done(shell(0.0), now - 11, duration=10, until_idle=None)
    assert not _done(shell(0.0), now - 5, duration=10, until_idle=None)
    assert _done(shell(6.0), now - 60, duration=None, until_idle=5)
    assert not _done(shell(1.0), now - 60, duration=None, until_idle=5)
    assert not _done(shell(None), now - 60, duration=None, until_idle=5), "no record yet is not idle input"
    assert not _done(shell(60.0), now - 60, duration=None, until_idle=None), "unbounded: runs until stopped"


def test_input_paused_for_failing_storage_is_not_idle():
    assert not _done(shell(60.0, storage_failing=True), time.monotonic() - 60, duration=None, until_idle=5)
    assert not _done(shell(60.0, pending_rows=363), time.monotonic() - 60, duration=None, until_idle=5), \
        "rows still waiting on a first slow write are not idle input"


def test_records_waiting_unread_in_kafka_are_not_idle_input():
    started = time.monotonic() - 60
    assert not _done(shell(30.0, unread={("reveal.samples", 0): 0, ("reveal.samples", 1): 12}), started, None, 5), \
        "a stalled fetch with records behind it is not the end of the input"
    assert _done(shell(30.0, unread={("reveal.samples", 0): 0, ("reveal.samples", 1): 0}), started, None, 5)


def test_a_worker_starts_with_bounded_queues_and_retries():
    args = build_parser().parse_args(["worker", "--bootstrap", "127.0.0.1:9092", "--clickhouse", "chdb:///tmp/w"])
    assert (args.group, args.database, args.max_pending_rows, args.storage_retry_max) == \
        ("reveal-worker", "reveal", 50_000, 30.0)
    assert args.duration is None and args.until_idle is None and args.metrics_listen is None
