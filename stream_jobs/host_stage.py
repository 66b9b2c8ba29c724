"""The host stage shared by every shell: catalogs and frames in; window rows, anomalies, alerts, host-window
summaries and saved baselines out.

It keeps one engine pipeline per host, holds back frames whose catalog has not arrived yet (so the order in which a
worker reads the catalog and sample topics does not matter), restores a host's saved baseline when it has one, and
turns verdicts into incidents and alerts.
"""

from __future__ import annotations

import logging
from collections import defaultdict, deque
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np

from schemas.channels import CPU_BUSY_PCT_ALL, GPU_UTILIZATION_PREFIX
from schemas.records import Catalog, Frame
from stream_jobs.engine.baseline_fit import why_not_resumed
from stream_jobs.engine.channels import ChannelTable
from stream_jobs.engine.decide.incidents import AlertEvent
from stream_jobs.engine.decide.regime import RegimeDetector, Settling
from stream_jobs.engine.host_pipeline import HostPipeline
from stream_jobs.engine.settings import EngineSettings, refit_phase
from stream_jobs.engine.verdicts import WindowVerdict
from stream_jobs.records import StageOutput, alert_record, anomaly_record, baseline_row, host_window, window_row

log = logging.getLogger(__name__)

MAX_HELD_FRAMES = 600
BaselineLoader = Callable[[str, int], "dict | None"]


@dataclass
class StageCounters:
    frames: int = 0
    held: int = 0
    dropped_unknown_catalog: int = 0
    catalog_changes: int = 0
    sequence_gaps: int = 0
    baselines_restored: int = 0
    regime_changes: int = 0


class HostStage:
    """Per-host engine state for every host this shell sees."""

    def __init__(self, settings: EngineSettings = EngineSettings(), baseline_loader: BaselineLoader | None = None,
                 baselines_stored_in: str = ""):
        self.settings = settings
        self.baseline_loader = baseline_loader
        self.baselines_stored_in = baselines_stored_in  # where the loader looks, for the console
        self.catalogs: dict[str, dict[int, Catalog]] = defaultdict(dict)
        self.pipelines: dict[str, tuple[int, HostPipeline]] = {}
        self.counters = StageCounters()
        # workload changes are told here; the host's anomalies become incidents in the cluster stage, which sets
        # aside what the host's peers share
        self.settling = Settling(settings.decision.settle_s)
        decision = settings.decision
        self.regimes = RegimeDetector(decision.regime_hold_s, decision.idle_below_pct, decision.busy_above_pct)
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
        output = StageOutput()
        for verdict in pipeline.push(frame.timestamp_ns, frame.values):
            output.extend(self._outputs(catalog, pipeline, verdict))
        return output

    def needed_since_ns(self, host: str) -> int | None:
        """The oldest frame instant the host's state depends on (frames held for a catalog, windows in progress, a
        baseline being learned, an open incident); None when it depends on none. Frames before it can be released:
        a worker that starts again from it rebuilds the same state."""
        held = self._held.get(host)
        pipeline = self.pipelines.get(host)
        candidates = (held[0].timestamp_ns if held else None,
                      pipeline[1].needed_since_ns() if pipeline else None)
        present = [instant for instant in candidates if instant is not None]
        return min(present) if present else None

    def forget(self, host: str) -> None:
        """Drop the host's windows in progress, baseline and incidents (its catalogs stay): another worker, or this
        one again from the last committed offset, takes it over."""
        self.pipelines.pop(host, None)
        self._held.pop(host, None)
        self._last_sequence.pop(host, None)
        self.settling.forget(host)
        self.regimes.forget(host)

    def close(self) -> StageOutput:
        """The end of a run or of a worker: the host stage holds no incident (they are the cluster stage's)."""
        return StageOutput()

    def _outputs(self, catalog: Catalog, pipeline: HostPipeline, verdict: WindowVerdict) -> StageOutput:
        if verdict.baseline_changed:
            self._report_baseline(catalog.host, pipeline, verdict)
        anomaly = anomaly_record(catalog, verdict) if verdict.anomalous else None
        events = self._regime_events(catalog, pipeline, verdict)
        settling = self.settling.settling(catalog.host, verdict.end_ns)
        return StageOutput([window_row(catalog, verdict)], [anomaly] if anomaly else [],
                           [alert_record(e, catalog.cluster) for e in events],
                           [host_window(catalog, pipeline, verdict, settling)]
                           if verdict.channel_means is not None else [],
                           [baseline_row(catalog, pipeline, verdict)] if verdict.baseline_changed else [], [verdict])

    @staticmethod
    def _report_baseline(host: str, pipeline: HostPipeline, verdict: WindowVerdict) -> None:
        kept = int(pipeline.kept.sum()) if pipeline.kept is not None else 0
        saved = 1 - kept / max(len(pipeline.signal_names), 1)
        log.info("%s: baseline learned; selection keeps %d of %d channels (%.0f%% fewer), %d features per window",
                 host, kept, len(pipeline.signal_names), 100 * saved, len(pipeline.layout.names))
        sureness = how_sure(pipeline)
        if sureness:
            log.info("%s: %s", host, sureness)
        if pipeline.doubt is not None and not verdict.baseline_ready:  # just learned, not refitted
            log.warning("%s: %s", host, pipeline.doubt.told(pipeline.settings.stride_s))

    def _regime_events(self, catalog: Catalog, pipeline: HostPipeline, verdict: WindowVerdict) -> list[AlertEvent]:
        """A workload that starts or stops is one notice and a fresh baseline, not a storm of anomalies."""
        level = activity_level(pipeline.signal_names, verdict.channel_means)
        change = self.regimes.observe(catalog.host, verdict.window_id, verdict.end_ns, level) \
            if level is not None else None
        if change is None:
            return []
        self.counters.regime_changes += 1
        pipeline.restart_baseline()
        log.info("%s: %s at window %d; learning a new baseline", catalog.host, change, verdict.window_id)
        return [self.settling.regime_change(catalog.host, verdict.window_id, verdict.start_ns, verdict.end_ns, change)]

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
        """The host's pipeline; a new catalog version starts a new one, restored from a saved baseline if any."""
        current = self.pipelines.get(catalog.host)
        if current is not None and current[0] == catalog.version:
            return current[1]
        if current is not None:
            self.counters.catalog_changes += 1
            log.info("catalog of %s changed to version %d", catalog.host, catalog.version)
        table = ChannelTable.of_catalog(catalog)
        settings = self.settings if catalog.interval_s == self.settings.interval_s else \
            EngineSettings(**{**self.settings.__dict__, "interval_s": catalog.interval_s})
        pipeline = HostPipeline(table, settings, refit_phase(catalog.host, settings.refit_every))
        restored = self._restore(catalog, pipeline, first=current is None)
        if current is not None and not restored:
            self._carry_over(catalog, current[1], pipeline)
        self.pipelines[catalog.host] = (catalog.version, pipeline)
        return pipeline

    @staticmethod
    def _carry_over(catalog: Catalog, previous: HostPipeline, pipeline: HostPipeline) -> None:
        """A new catalog (an interface or container came or went): the channels both catalogs have keep their
        bands and stay watched while the baseline is learned again; the console says what changed."""
        carried = pipeline.carry_bands_from(previous)
        added = len(set(pipeline.signal_names) - set(previous.signal_names))
        removed = len(set(previous.signal_names) - set(pipeline.signal_names))
        log.info("%s: catalog version %d adds %d and removes %d channels; %d keep their bands and stay watched while "
                 "the baseline is learned again (%d windows)", catalog.host, catalog.version, added, removed, carried,
                 pipeline.settings.warmup_windows)

    def _restore(self, catalog: Catalog, pipeline: HostPipeline, first: bool) -> bool:
        """Resume the host's stored baseline where it fits; for the host's first pipeline (a restart), the console
        says why it does not (a later catalog change tells its own story)."""
        if self.baseline_loader is None:
            return False
        saved = self.baseline_loader(catalog.host, catalog.version)
        misfit = why_not_resumed(saved, catalog.version, pipeline.signal_names, pipeline.settings.learned_with(),
                                 self.baselines_stored_in)
        if not misfit and pipeline.restore(saved):
            self.counters.baselines_restored += 1
            log.info("%s: baseline restored (%d windows seen before)", catalog.host, pipeline.windows_seen)
            return True
        if first:
            log.info("%s: baseline not resumed: %s; learning it again", catalog.host, misfit)
        return False


def how_sure(pipeline: HostPipeline) -> str:
    """How sure the host's baseline is, in words, while it is learned from less than its drift horizon (a cold
    start); empty once it has been watched that long."""
    watch = pipeline.watch
    if not pipeline.baseline_ready or watch.widening <= 1:
        return ""
    return (f"learned {watch.learned_s:.0f} s of this host; judging only changes {watch.widening:.1f} times what its "
            f"noise allows until it has been watched {pipeline.settings.watch.drift_horizon_s / 60:.0f} min")


def activity_level(names: tuple[str, ...], means: np.ndarray | None) -> float | None:
    """The host's activity for regime changes: CPU busy % of the whole host, or mean GPU utilisation."""
    if means is None:
        return None
    cpu, gpus = _activity_columns(names)
    if cpu is not None:
        return float(means[cpu]) if np.isfinite(means[cpu]) else None
    return float(np.nanmean(means[gpus])) if gpus and np.isfinite(means[gpus]).any() else None


@lru_cache(maxsize=256)
def _activity_columns(names: tuple[str, ...]) -> tuple[int | None, list[int]]:
    """Where the host's CPU busy % is among `names`, and its GPUs' utilisations: asked every window, found once."""
    cpu = names.index(CPU_BUSY_PCT_ALL) if CPU_BUSY_PCT_ALL in names else None
    return cpu, [i for i, name in enumerate(names) if name.startswith(GPU_UTILIZATION_PREFIX)]
