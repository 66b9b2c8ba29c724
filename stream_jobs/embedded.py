"""Embedded mode: the agent, the engine and chDB in one process on this host, with no broker."""

from __future__ import annotations

import logging
import time
from typing import Callable, TextIO

from schemas.records import Catalog, Frame
from sinks.clickhouse import ClickHouseWriter
from stream_jobs.cluster_stage import ClusterStage
from stream_jobs.host_stage import HostStage, StageOutput
from stream_jobs.results import queue_catalog, queue_cluster_output, queue_frame, queue_output

log = logging.getLogger(__name__)


class EmbeddedRunner:
    """A FrameSink that runs each frame through the host stage and stores everything, flushing about once a second."""

    def __init__(self, stage: HostStage, writer: ClickHouseWriter, console: TextIO | None = None,
                 flush_every_s: float = 1.0, clock: Callable[[], float] = time.monotonic):
        self.stage, self.writer, self.console = stage, writer, console
        self.flush_every_s = flush_every_s
        self.cluster = ClusterStage()
        self.windows = 0
        self.anomalies = 0
        self.alerts = 0
        self._clock = clock
        self._last_flush = clock()

    def on_catalog(self, catalog: Catalog) -> None:
        queue_catalog(self.writer, catalog)
        self._show(f"catalog: {len(catalog.channels)} channels (version {catalog.version})")
        self._handle(self.stage.on_catalog(catalog))

    def on_frame(self, frame: Frame) -> None:
        queue_frame(self.writer, frame)
        self._handle(self.stage.on_frame(frame))
        if self._clock() - self._last_flush >= self.flush_every_s:
            self.flush()

    def flush(self) -> None:
        self.writer.flush()
        self._last_flush = self._clock()

    def close(self) -> None:
        """Close open incidents and store what is left."""
        self._handle(self.stage.close())
        queue_cluster_output(self.writer, self.cluster.flush())
        self.flush()

    def _handle(self, output: StageOutput) -> None:
        queue_output(self.writer, output)
        for summary in output.host_windows:
            cluster_output = self.cluster.on_host_window(summary)
            queue_cluster_output(self.writer, cluster_output)
            output.alerts += cluster_output.alerts
        self.windows += len(output.verdicts)
        self.anomalies += len(output.anomalies)
        self.alerts += len(output.alerts)
        for verdict in output.verdicts:
            self._show(describe_verdict(verdict, self.stage.settings.warmup_windows, self.windows))
        for alert in output.alerts:
            self._show(f"ALERT {alert.state} [{alert.kind}/{alert.subsystem or '-'}] {alert.host}: {alert.summary}"
                       + (f" — hint: {alert.hint}" if alert.hint else ""))

    def _show(self, line: str) -> None:
        if self.console is not None:
            print(line, file=self.console, flush=True)


def describe_verdict(verdict, warmup_windows: int, windows_seen: int) -> str:
    """One terminal line per window: learning progress, a normal score, or an anomaly with its claim."""
    stamp = time.strftime("%H:%M:%S", time.localtime(verdict.end_ns / 1e9))
    if not verdict.baseline_ready:
        return f"{stamp}  window {verdict.window_id}  learning baseline {min(windows_seen, warmup_windows)}/" \
               f"{warmup_windows}"
    if not verdict.anomalous:
        return f"{stamp}  window {verdict.window_id}  severity {verdict.score:5.2f}  normal"
    return (f"{stamp}  window {verdict.window_id}  severity {verdict.score:5.2f}  ANOMALY "
            f"({'+'.join(verdict.detectors)}) [{verdict.subsystem}] {verdict.claim}")
