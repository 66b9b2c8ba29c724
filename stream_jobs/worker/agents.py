"""What the worker's agents do with each Kafka record: decode it (or dead-letter it), hand it to a stage, store and
publish what the stage returns, and mark the record consumed; every decision is in the stages and the engine."""

from __future__ import annotations

import logging
import time

from schemas.codec import DecodeError
from schemas.records import DEADLETTER_CODEC, encode_alert, encode_anomaly, encode_host_window
from stream_jobs.records import StageOutput
from stream_jobs.worker.offsets import PartitionOffsets
from stream_jobs.worker.shell import WorkerShell

log = logging.getLogger(__name__)


def dead_letter(step: str, event, reason: str) -> bytes:
    """The dead-letter record for a Kafka message that could not be handled."""
    message = event.message
    key = message.key or b""
    return DEADLETTER_CODEC.encode({
        "step": step, "topic": message.topic, "partition": message.partition, "offset": message.offset,
        "host": key.decode("utf-8", "replace"), "reason": reason, "payload": bytes(message.value or b""),
        "rejected_at_ns": time.time_ns()})


class RecordHandler:
    """Feeds an agent's stream to a stage and sends its findings to the anomaly, alert and host-window topics."""

    def __init__(self, shell: WorkerShell, offsets: PartitionOffsets, anomalies, alerts, host_windows, deadletters):
        self.shell, self.offsets = shell, offsets
        self.anomalies, self.alerts, self.host_windows, self.deadletters = anomalies, alerts, host_windows, deadletters

    async def consume(self, stream, step: str, decode, handle, forward=None, hold=None) -> None:
        """Decode each record in offset order, dead-letter what cannot be decoded, hand the rest to the stage;
        offsets are committed when the shell releases the records (after their results are stored)."""
        shell, forward = self.shell, forward or self.publish
        async for event in stream.noack().events():
            message = event.message
            if not await self.offsets.ready_to_process(message):
                continue
            generation = shell.cursors.generation
            shell.note_record()
            try:
                record = decode(event.value)
            except DecodeError as error:
                await self.reject(step, event, error)
                record = None
            else:
                await forward(handle(record))
            if generation != shell.cursors.generation:
                continue  # revoked while it was handled: its state is gone and the new owner reads it again
            shell.releases.consumed(message.tp, message.offset)
            if record is not None and hold is not None:
                hold(record, message.tp, message.offset)
            shell.cursors.processed(message.tp, message.offset)

    async def reject(self, step: str, event, error: Exception) -> None:
        self.shell.counters.dead_letters += 1
        log.warning("%s: record %s[%d]@%d rejected: %s", step, event.message.topic, event.message.partition,
                    event.message.offset, error)
        await self.deadletters.send(key=event.message.key, value=dead_letter(step, event, str(error)))

    async def publish(self, output) -> None:
        """Store a host stage's output, publish its findings and send its host-window summaries on."""
        self.shell.store.store_output(output)
        await self.publish_findings(output)
        for summary in output.host_windows:
            await self.host_windows.send(key=summary.cluster.encode(), value=encode_host_window(summary))

    async def publish_findings(self, output) -> None:
        for anomaly in output.anomalies:
            self.shell.counters.anomalies += 1
            await self.anomalies.send(key=anomaly.host.encode(), value=encode_anomaly(anomaly))
        for alert in output.alerts:
            await self.alerts.send(key=alert.host.encode(), value=encode_alert(alert))

    async def publish_cluster(self, output) -> None:
        self.shell.store.store_output(output)
        await self.publish_findings(output)

    def take_catalog(self, catalog):
        self.shell.store.store_catalog(catalog)
        return self.shell.stage.on_catalog(catalog)

    def take_frames(self, frames):
        """A message's frames, stored and judged in order, their outputs as one."""
        output = StageOutput()
        for frame in frames:
            self.shell.store.store_frame(frame)
            output.extend(self.shell.stage.on_frame(frame))
        return output
