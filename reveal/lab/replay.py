"""Replays a lab run's recordings through the live engine (host stage, then cluster stage) in time order, and turns
what it said into the records that scoring reads.

The engine sees the frames as the embedded runner and the Faust worker would, so a replay with the worker's settings
equals the live run; replays with other thresholds or window settings give the comparisons the lab reports.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Iterable, Iterator

from producers.recording import read_recording
from schemas.records import Alert, Anomaly, Catalog, Frame
from stream_jobs.cluster_stage import ClusterStage
from stream_jobs.engine.host_pipeline import EngineSettings
from stream_jobs.host_stage import HostStage
from stream_jobs.records import StageOutput
from reveal.lab.truth import ReportedIncident, ReportedWindow, RetransmissionVerdict, RunOutputs


@dataclass
class ReplayResult:
    """Everything the stages produced, as the shells would store it."""

    catalogs: list[Catalog] = field(default_factory=list)
    frames: list[Frame] = field(default_factory=list)
    host: StageOutput = field(default_factory=StageOutput)
    cluster: StageOutput = field(default_factory=StageOutput)


def merged_recordings(paths: Iterable[str | Path]) -> Iterator[Catalog | Frame]:
    """Catalogs and frames of several recordings, frames in timestamp order (a catalog before its host's frames)."""
    tie = count()
    streams = [iter(read_recording(path)) for path in paths]
    heap = []
    for stream in streams:
        _push_next(heap, stream, tie)
    while heap:
        _, _, item, stream = heapq.heappop(heap)
        yield item
        _push_next(heap, stream, tie)


def _push_next(heap: list, stream: Iterator, tie: count) -> None:
    item = next(stream, None)
    if item is not None:
        timestamp = item.timestamp_ns if isinstance(item, Frame) else -1
        heapq.heappush(heap, (timestamp, next(tie), item, stream))


def replay(items: Iterable[Catalog | Frame], settings: EngineSettings, keep_frames: bool = False) -> ReplayResult:
    """Run the host and cluster stages over catalogs and frames in order, and close every incident at the end."""
    result = ReplayResult()
    host_stage, cluster_stage = HostStage(settings), ClusterStage(settings)
    for item in items:
        if isinstance(item, Catalog):
            result.catalogs.append(item)
            output = host_stage.on_catalog(item)
        else:
            if keep_frames:
                result.frames.append(item)
            output = host_stage.on_frame(item)
        _take(result, output, cluster_stage)
    _take(result, host_stage.close(), cluster_stage)
    result.cluster.extend(cluster_stage.flush())
    return result


def _take(result: ReplayResult, output: StageOutput, cluster_stage: ClusterStage) -> None:
    result.host.extend(output)
    for summary in output.host_windows:
        result.cluster.extend(cluster_stage.on_host_window(summary))


def reported(result: ReplayResult) -> RunOutputs:
    """The incidents, judged windows and retransmission verdicts of a replay, for scoring."""
    anomalies = [*result.host.anomalies, *result.cluster.anomalies]
    windows = [ReportedWindow(row[0], row[3], row[4], bool(row[9])) for row in result.host.window_rows
               if row[6]]  # baseline_ready: windows judged against a learnt baseline
    verdicts = [RetransmissionVerdict(row[0], row[3], row[4], row[5]) for row in result.cluster.retransmission_rows]
    return RunOutputs(incidents(result.host.alerts + result.cluster.alerts, anomalies), windows, verdicts)


def incidents(alerts: list[Alert], anomalies: list[Anomaly]) -> list[ReportedIncident]:
    """The incidents an operator is told of: one per alert (all its states), of its kind (host detectors, peer,
    retransmissions, regime), opened at the end of the window that opened it. Its subsystems are what the alert
    said when it opened, then those of the same host's anomalies of the same kind inside it, ranked by count and
    severity; its channels are those anomalies' evidence, in order."""
    anomalies_of: dict[tuple[str, str], list[Anomaly]] = defaultdict(list)
    for anomaly in anomalies:
        anomalies_of[(anomaly.host, anomaly_kind(anomaly))].append(anomaly)
    found = []
    for states in _alerts_by_id(alerts).values():
        opening = min(states, key=lambda a: a.end_ns)
        start, end = min(a.start_ns for a in states), max(a.end_ns for a in states)
        inside = [a for a in anomalies_of[(opening.host, opening.kind)] if a.window_end_ns > start
                  and a.window_start_ns < end]
        found.append(ReportedIncident(opening.host, start, end, opening.end_ns,
                                      _ranked_subsystems(inside, opening.subsystem),
                                      max(a.severity for a in states), opening.kind,
                                      channels=_named_channels(inside)))
    return sorted(found, key=lambda i: (i.opened_ns, i.host, i.kind, i.start_ns, i.end_ns, i.severity))


def _named_channels(anomalies: list[Anomaly]) -> tuple[str, ...]:
    """The channels an incident's anomalies name, window by window, whatever order they were read back in."""
    ordered = sorted(anomalies, key=lambda a: (a.window_start_ns, a.window_end_ns, a.subsystem, a.score, a.claim))
    return tuple(dict.fromkeys(e.channel for a in ordered for e in a.evidence))


def anomaly_kind(anomaly: Anomaly) -> str:
    """The kind of alert an anomalous window belongs to: peer comparison, retransmissions, or the host's own
    detectors."""
    if "peer" in anomaly.detectors:
        return "peer"
    if "retransmissions" in anomaly.detectors:
        return "retransmissions"
    if "configuration" in anomaly.detectors:
        return "configuration"
    return "anomaly"


def _alerts_by_id(alerts: list[Alert]) -> dict[str, list[Alert]]:
    by_id: dict[str, list[Alert]] = defaultdict(list)
    for alert in alerts:
        by_id[alert.alert_id].append(alert)
    return by_id


def _ranked_subsystems(anomalies: list[Anomaly], opening_subsystem: str) -> tuple[str, ...]:
    weight: dict[str, float] = defaultdict(float)
    for anomaly in sorted(anomalies, key=lambda a: (a.window_start_ns, a.subsystem, a.score)):
        if anomaly.subsystem:
            weight[anomaly.subsystem] += 1.0 + min(anomaly.score / max(anomaly.threshold, 1e-12), 10.0) / 10
    ranked = sorted(weight, key=lambda s: (-weight[s], s))
    return tuple(dict.fromkeys([opening_subsystem, *ranked] if opening_subsystem else ranked))
