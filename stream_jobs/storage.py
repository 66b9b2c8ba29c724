"""What the embedded runner and the Faust worker store their results into, and the error they wait out: the
contract a sink fulfils, so that the stream shells never name the database they write to."""

from __future__ import annotations

from typing import Mapping, Protocol

from schemas.records import Catalog, Frame
from stream_jobs.records import StageOutput


class StorageUnavailable(RuntimeError):
    """The store could not be reached or refused rows; whatever was queued stays queued for the next attempt."""


class ResultStore(Protocol):
    """Queues the stages' results and writes them in batches; `is_full` asks the caller to stop taking input once
    `max_pending_rows` wait (back-pressure: nothing queued is dropped)."""

    max_pending_rows: int

    def store_catalog(self, catalog: Catalog) -> None: ...

    def store_frame(self, frame: Frame) -> None: ...

    def store_output(self, output: StageOutput) -> None:
        """Queue a stage's output: its windows, anomalies, alerts, baselines and retransmission verdicts."""

    def flush(self) -> int:
        """Write every queued row; returns how many; raises StorageUnavailable and keeps them if it cannot."""

    def pending_rows(self) -> int: ...

    def is_full(self) -> bool: ...

    @property
    def rows_written(self) -> Mapping[str, int]:
        """Rows written so far, per table."""

    def embedded_memory_bytes(self) -> int | None:
        """Memory an embedded database holds inside this process (a worker's own figure leaves it out); None when
        the database runs elsewhere."""

    def saved_baseline(self, host: str, catalog_version: int) -> dict | None:
        """The latest baseline stored for this host and catalog version, else the host's latest of another
        version (its `catalog_version` says which, so that a restart can tell what changed); None when none is."""

    def close(self) -> None: ...
