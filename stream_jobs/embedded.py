"""Embedded mode: the agent, the engine and chDB in one process on this host, with no broker."""

from __future__ import annotations

import logging
import time
from typing import Callable, TextIO

from schemas.records import Catalog, Frame
from stream_jobs.engine.severity import severity_word
from stream_jobs.cluster_stage import ClusterStage
from stream_jobs.host_stage import HostStage, how_sure
from stream_jobs.live_state import LiveState
from stream_jobs.records import StageOutput
from stream_jobs.storage import ResultStore

log = logging.getLogger(__name__)


class EmbeddedRunner:
    """A FrameSink that runs each frame through the host stage and stores everything in `store`, flushing about
    once a second."""

    def __init__(self, stage: HostStage, store: ResultStore, console: TextIO | None = None,
                 flush_every_s: float = 1.0, clock: Callable[[], float] = time.monotonic,
                 live: LiveState | None = None, one_host: bool = False):
        self.stage, self.store, self.console, self.live = stage, store, console, live
        self.flush_every_s = flush_every_s
        self.cluster = ClusterStage(stage.settings, one_host=one_host)  # see ClusterStage._reported_through
        self.windows = 0
        self.anomalous_windows = 0
        self.anomalies = 0
        self.alerts = 0
        self.incidents: set[str] = set()
        self._learned_windows: dict[str, int] = {}
        self._judged_hosts: set[str] = set()
        self._clock = clock
        self._last_flush = clock()

    def on_catalog(self, catalog: Catalog) -> None:
        self.store.store_catalog(catalog)
        if self.live is not None:
            self.live.on_catalog(catalog)
        self._show(f"catalog: {len(catalog.channels)} channels (version {catalog.version})")
        self._handle(self.stage.on_catalog(catalog))

    def on_frame(self, frame: Frame) -> None:
        self.store.store_frame(frame)
        if self.live is not None:
            self.live.on_frame(frame)
        self._handle(self.stage.on_frame(frame))
        if self._clock() - self._last_flush >= self.flush_every_s:
            self.flush()

    def end_block(self) -> None:
        """Each frame is judged as it comes; a block of them changes nothing here."""

    def flush(self) -> None:
        self.store.flush()
        self._last_flush = self._clock()

    def close(self) -> None:
        """Close open incidents and store what is left."""
        self._handle(self.stage.close())
        remaining = self.cluster.flush()
        self.store.store_output(remaining)
        self._count(remaining.anomalies, remaining.alerts)
        self.flush()

    def _handle(self, output: StageOutput) -> None:
        self.store.store_output(output)
        self.anomalies += len(output.anomalies)
        across_hosts = []
        for summary in output.host_windows:
            cluster_output = self.cluster.on_host_window(summary)
            self.store.store_output(cluster_output)
            across_hosts += cluster_output.anomalies
            output.alerts += cluster_output.alerts
        output.anomalies += across_hosts
        if self.live is not None:
            self._show_live(output)
        for row, verdict in zip(output.window_rows, output.verdicts):
            self.windows += 1
            self.anomalous_windows += verdict.anomalous
            self._show(describe_verdict(verdict, self.stage.settings.warmup_windows, self._learning(row[0], verdict),
                                        relearning=row[0] in self._judged_hosts))
        self._count(across_hosts, output.alerts)

    def _count(self, across_hosts: list, alerts: list) -> None:
        """Count and tell the anomalies found across hosts (the host detectors' are told on their window's line)
        and the incidents' alert events."""
        self.anomalies += len(across_hosts)
        for anomaly in across_hosts:
            self._show(f"ANOMALY [{'+'.join(anomaly.detectors)}/{anomaly.subsystem or '-'}] {anomaly.host}: "
                       f"{anomaly.claim}")
        self.alerts += len(alerts)
        for alert in alerts:
            self.incidents.add(alert.alert_id)
            self._show(f"INCIDENT {alert.state} [{alert.kind}/{alert.subsystem or '-'}] {alert.host}: severity "
                       f"{alert.severity:.1f} ({severity_word(alert.severity)}): {alert.summary}" + (f" — hint: {alert.hint}" if alert.hint else ""))

    def _learning(self, host: str, verdict) -> int:
        """How many windows the host has learned in its current learning spell (0 once it judges)."""
        if verdict.baseline_ready:
            self._judged_hosts.add(host)
            self._learned_windows[host] = 0
        else:
            self._learned_windows[host] = self._learned_windows.get(host, 0) + 1
        return self._learned_windows[host]

    def summary(self) -> str:
        """The run's totals in the words the tables use."""
        return (f"{self.windows} windows ({self.anomalous_windows} anomalous), {self.anomalies} anomalies, "
                f"{len(self.incidents)} incidents ({self.alerts} alert events)")

    def _show_live(self, output: StageOutput) -> None:
        for row, verdict in zip(output.window_rows, output.verdicts):
            pipeline = self.stage.pipelines.get(row[0])
            self.live.on_window(row[0], verdict, how_sure(pipeline[1]) if pipeline else "")
        for anomaly in output.anomalies:
            self.live.on_anomaly(anomaly)
        for alert in output.alerts:
            self.live.on_alert(alert)

    def _show(self, line: str) -> None:
        if self.console is not None:
            print(line, file=self.console, flush=True)


def describe_verdict(verdict, warmup_windows: int, learned: int, relearning: bool = False) -> str:
    """One terminal line per window: learning progress and why, or the host detectors' score against its threshold
    and, for an anomalous window, its claim."""
    stamp = time.strftime("%H:%M:%S", time.localtime(verdict.end_ns / 1e9))
    if not verdict.baseline_ready:
        why = "relearning after the channel catalog changed" if relearning else "learning this host's baseline"
        return (f"{stamp}  window {verdict.window_id}  learning baseline {min(learned, warmup_windows)}/"
                f"{warmup_windows} ({why}; nothing is judged until it is learned)")
    verdict_words = "normal" if not verdict.anomalous else (
        f"ANOMALOUS ({'+'.join(verdict.detectors)}) [{verdict.subsystem}] {verdict.claim}")
    return f"{stamp}  window {verdict.window_id}  score {verdict.score:5.2f} / threshold {verdict.threshold:.2f}  " \
           f"{verdict_words}"
