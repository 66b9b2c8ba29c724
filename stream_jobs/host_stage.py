"""The host stage shared by every shell: catalogs and frames in; window rows and anomaly records out.

It keeps one engine pipeline per host and holds back frames whose catalog has not arrived yet, so the order in
which a worker reads the catalog and sample topics does not matter.
"""

from __future__ import annotations

import logging
from collections import defaultdict, deque
from dataclasses import dataclass, field

import numpy as np

from schemas.records import Anomaly, Catalog, Evidence, Frame
from stream_jobs.engine.channels import ChannelTable
from stream_jobs.engine.host_pipeline import EngineSettings, HostPipeline, WindowVerdict

log = logging.getLogger(__name__)

MAX_HELD_FRAMES = 600


@dataclass
class StageOutput:
    """What one frame produced: window rows for storage and anomalies to publish."""

    window_rows: list[list] = field(default_factory=list)
    anomalies: list[Anomaly] = field(default_factory=list)
    verdicts: list[WindowVerdict] = field(default_factory=list)

    def extend(self, other: "StageOutput") -> None:
        self.window_rows += other.window_rows
        self.anomalies += other.anomalies
        self.verdicts += other.verdicts


@dataclass
class StageCounters:
    frames: int = 0
    held: int = 0
    dropped_unknown_catalog: int = 0
    catalog_changes: int = 0
    sequence_gaps: int = 0


class HostStage:
    """Per-host engine state for every host this shell sees."""

    def __init__(self, settings: EngineSettings = EngineSettings()):
        self.settings = settings
        self.catalogs: dict[str, dict[int, Catalog]] = defaultdict(dict)
        self.pipelines: dict[str, tuple[int, HostPipeline]] = {}
        self.counters = StageCounters()
        self._held: dict[str, deque[Frame]] = defaultdict(deque)
        self._last_sequence: dict[str, int] = {}

    def on_catalog(self, catalog: Catalog) -> StageOutput:
        """Remember a host's catalog and process any frames that were waiting for it."""
        self.catalogs[catalog.host][catalog.version] = catalog
        output = StageOutput()
        waiting, self._held[catalog.host] = self._held[catalog.host], deque()
        for frame in waiting:
            output.extend(self.on_frame(frame))
        return output

    def on_frame(self, frame: Frame) -> StageOutput:
        catalog = self.catalogs[frame.host].get(frame.catalog_version)
        if catalog is None:
            return self._hold(frame)
        self.counters.frames += 1
        self._track_sequence(frame)
        pipeline = self._pipeline_for(catalog)
        verdicts = pipeline.push(frame.timestamp_ns, np.asarray(frame.values, dtype=np.float64))
        return StageOutput([window_row(catalog, v) for v in verdicts],
                           [anomaly_record(catalog, v) for v in verdicts if v.anomalous], verdicts)

    def _hold(self, frame: Frame) -> StageOutput:
        held = self._held[frame.host]
        if len(held) >= MAX_HELD_FRAMES:
            held.popleft()
            self.counters.dropped_unknown_catalog += 1
        held.append(frame)
        self.counters.held += 1
        return StageOutput()

    def _track_sequence(self, frame: Frame) -> None:
        last = self._last_sequence.get(frame.host)
        if last is not None and frame.sequence > last + 1:
            self.counters.sequence_gaps += frame.sequence - last - 1
        self._last_sequence[frame.host] = frame.sequence

    def _pipeline_for(self, catalog: Catalog) -> HostPipeline:
        """The host's pipeline; a new catalog version starts a new one, with a baseline learned afresh."""
        current = self.pipelines.get(catalog.host)
        if current is None or current[0] != catalog.version:
            if current is not None:
                self.counters.catalog_changes += 1
                log.info("catalog of %s changed to version %d: baseline is learned again", catalog.host,
                         catalog.version)
            table = ChannelTable(catalog.names, catalog.kinds, tuple(c.subsystem for c in catalog.channels))
            settings = self.settings if catalog.interval_s == self.settings.interval_s else \
                EngineSettings(**{**self.settings.__dict__, "interval_s": catalog.interval_s})
            current = (catalog.version, HostPipeline(table, settings))
            self.pipelines[catalog.host] = current
        return current[1]


def window_row(catalog: Catalog, verdict: WindowVerdict) -> list:
    return [catalog.host, catalog.cluster, verdict.window_id, verdict.start_ns, verdict.end_ns, verdict.frames,
            int(verdict.baseline_ready), verdict.score, _finite(verdict.threshold), int(verdict.anomalous)]


def anomaly_record(catalog: Catalog, verdict: WindowVerdict) -> Anomaly:
    evidence = tuple(Evidence(c.channel, c.feature, c.value, c.baseline_mean, c.baseline_std, c.z)
                     for c in verdict.evidence)
    return Anomaly(catalog.host, catalog.cluster, verdict.window_id, verdict.start_ns, verdict.end_ns,
                   verdict.detectors, verdict.score, verdict.threshold, verdict.subsystem, verdict.claim, evidence)


def _finite(value: float) -> float:
    """Infinity (no baseline yet) is stored as 0 so that SQL aggregates stay finite."""
    return value if np.isfinite(value) else 0.0
