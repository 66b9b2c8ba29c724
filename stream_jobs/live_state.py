"""What the live page shows, kept up to date by the embedded runner: per host, the latest detector scores against
their thresholds, the learning state and its reason, open and recent incidents, and the traces of the channels the
latest findings name."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from schemas.records import Alert, Anomaly, Catalog, Frame
from stream_jobs.offline.output import finite_or_none

SCORES_KEPT = 180
TRACE_FRAMES_KEPT = 600
RECENT_INCIDENTS_KEPT = 10
TRACED_CHANNELS = 4


@dataclass
class _HostView:
    """One host's part of the page."""

    cluster: str = ""
    names: tuple[str, ...] = ()
    subsystems: tuple[str, ...] = ()
    counters: tuple[bool, ...] = ()
    catalog_version: int | None = None
    catalog_changes: int = 0
    windows: int = 0
    anomalies: int = 0
    learning: bool = True
    judged: bool = False
    sureness: str = ""
    scores: deque = field(default_factory=lambda: deque(maxlen=SCORES_KEPT))
    incidents: dict[str, dict] = field(default_factory=dict)
    closed: deque = field(default_factory=lambda: deque(maxlen=RECENT_INCIDENTS_KEPT))
    latest_anomaly: dict | None = None
    implicated: list[str] = field(default_factory=list)
    frames: deque = field(default_factory=lambda: deque(maxlen=TRACE_FRAMES_KEPT))


class LiveState:
    """Thread-safe: the runner feeds it, the page's server reads `snapshot()`."""

    def __init__(self, warmup_windows: int):
        self.warmup_windows = warmup_windows
        self._hosts: dict[str, _HostView] = {}
        self._lock = threading.Lock()

    def on_catalog(self, catalog: Catalog) -> None:
        with self._lock:
            view = self._hosts.setdefault(catalog.host, _HostView())
            if view.catalog_version is not None and view.catalog_version != catalog.version:
                view.catalog_changes += 1
            view.cluster, view.catalog_version = catalog.cluster, catalog.version
            view.names = tuple(c.name for c in catalog.channels)
            view.subsystems = tuple(c.subsystem for c in catalog.channels)
            view.counters = tuple(c.kind == "counter" for c in catalog.channels)
            view.frames.clear()

    def on_frame(self, frame: Frame) -> None:
        with self._lock:
            view = self._hosts.get(frame.host)
            if view is not None and frame.catalog_version == view.catalog_version:
                view.frames.append((frame.timestamp_ns, frame.values))

    def on_window(self, host: str, verdict, sureness: str = "") -> None:
        """One window's verdict (a WindowVerdict) for the host, and how sure its baseline is (see how_sure)."""
        with self._lock:
            view = self._hosts.setdefault(host, _HostView())
            view.sureness = sureness
            view.windows += 1
            view.learning = not verdict.baseline_ready
            view.judged |= bool(verdict.baseline_ready)
            view.scores.append({"end_ns": verdict.end_ns, "score": finite_or_none(verdict.score),
                                "threshold": finite_or_none(verdict.threshold), "anomalous": bool(verdict.anomalous),
                                "detectors": {name: {"score": finite_or_none(verdict.detector_scores.get(name)),
                                                     "threshold": finite_or_none(verdict.detector_thresholds.get(name))}
                                              for name in sorted(verdict.detector_scores)}})

    def on_anomaly(self, anomaly: Anomaly) -> None:
        with self._lock:
            view = self._hosts.setdefault(anomaly.host, _HostView())
            view.anomalies += 1
            view.latest_anomaly = {"end_ns": anomaly.window_end_ns, "subsystem": anomaly.subsystem,
                                   "claim": anomaly.claim, "explanation": anomaly.explanation, "hint": anomaly.hint,
                                   "evidence": [{"channel": e.channel, "feature": e.feature, "z": finite_or_none(e.z)}
                                                for e in anomaly.evidence]}
            self._implicate(view, [e.channel for e in anomaly.evidence])

    def on_alert(self, alert: Alert) -> None:
        with self._lock:
            view = self._hosts.setdefault(alert.host, _HostView())
            record = {"id": alert.alert_id, "kind": alert.kind, "state": alert.state, "start_ns": alert.start_ns,
                      "end_ns": alert.end_ns, "severity": finite_or_none(alert.severity), "subsystem": alert.subsystem,
                      "summary": alert.summary, "hint": alert.hint}
            if alert.state == "closed":
                view.incidents.pop(alert.alert_id, None)
                view.closed.appendleft(record)
            else:  # a closed incident whose symptom returned is open again, no longer among the recent ones
                view.incidents[alert.alert_id] = record
                view.closed = deque((r for r in view.closed if r["id"] != alert.alert_id), maxlen=view.closed.maxlen)
                self._implicate(view, [name for name in view.names if name in alert.summary])

    def snapshot(self) -> dict:
        """Everything the page shows, as plain JSON-able values."""
        with self._lock:
            return {"warmup_windows": self.warmup_windows,
                    "hosts": [self._host_snapshot(host, view) for host, view in sorted(self._hosts.items())]}

    def _host_snapshot(self, host: str, view: _HostView) -> dict:
        reason = ("relearning its baseline after the channel catalog changed" if view.judged
                  else "learning this host's first baseline")
        learning = (f"{reason}: window {min(view.windows, self.warmup_windows)} of "
                    f"{self.warmup_windows}, nothing is judged until it is learned" if view.learning else "")
        return {"host": host, "cluster": view.cluster, "channels": len(view.names), "windows": view.windows,
                "anomalies": view.anomalies, "catalog_changes": view.catalog_changes, "learning": learning,
                "sureness": view.sureness,
                "scores": list(view.scores), "open_incidents": list(view.incidents.values()),
                "recent_incidents": list(view.closed), "latest_anomaly": view.latest_anomaly,
                "traces": self._traces(view)}

    @staticmethod
    def _implicate(view: _HostView, channels: list[str]) -> None:
        known = [c for c in dict.fromkeys(channels) if c in view.names]
        view.implicated = (known + [c for c in view.implicated if c not in known])[:TRACED_CHANNELS]

    @staticmethod
    def _traces(view: _HostView) -> list[dict]:
        """The implicated channels over the kept frames: gauges as read, counters as per-second rates."""
        if len(view.frames) < 2:
            return []
        times = np.array([t for t, _ in view.frames], dtype=np.int64)
        values = np.vstack([v for _, v in view.frames])
        traces = []
        for name in view.implicated:
            index = view.names.index(name)
            series, unit = values[:, index], ""
            if view.counters[index]:
                with np.errstate(divide="ignore", invalid="ignore"):
                    series = np.diff(series) / (np.diff(times) / 1e9)
                unit = "per second"
            traces.append({"channel": name, "subsystem": view.subsystems[index], "per": unit,
                           "t_ns": times[-len(series):].tolist(), "values": [finite_or_none(v) for v in series.tolist()]})
        return traces
