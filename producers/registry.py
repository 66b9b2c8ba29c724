"""The table of collectors of one agent, each read at its own interval, and the catalog that orders their channels.

A source read less often than every tick holds its last values in the frames between reads. The registry lays its
frame out source by source, and hands frames out in the catalog's canonical order (schemas.agent_records), so a
host's channels keep one layout and one version across restarts whatever order its sources list them in. A source
whose reads take more than its time budget is read less often (its interval doubles, up to a limit), so one slow
source cannot stall the tick. Sources read from files whose layout the compiled scanner holds are read together, in
one call per tick straight into the frame (a ScanBatch), or for many ticks in one call that also keeps the schedule
(`sample_ticks`); a file the batch cannot vouch for is read again by its collector.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import numpy as np

from producers.collectors.base import Collector
from producers.fast_read.scanned_layout import ScannedLayout, new_batch
from schemas.agent_records import Catalog, Channel, canonical_order

log = logging.getLogger(__name__)

MAX_SOURCE_INTERVAL_S = 10.0
OVERRUNS_BEFORE_SLOWDOWN = 3


class DuplicateChannelError(ValueError):
    """Two collectors reported the same channel name."""


@dataclass
class SourceState:
    """How one collector is scheduled, and its channels and values as last read."""

    collector: Collector
    every_ticks: int
    budget_s: float
    names: tuple[str, ...] = ()
    values: list[float] | np.ndarray = field(default_factory=list)
    fresh: bool = False
    start: int = 0
    end: int = 0
    reads: int = 0
    failures: int = 0
    slowdowns: int = 0
    overruns_in_a_row: int = 0
    cpu_s: float = 0.0
    batch_index: int = -1  # its entry in the registry's ScanBatch, -1 when its collector reads it


class SampledTick(NamedTuple):
    """One tick read by the compiled loop: its index, when it woke (epoch ns), how late, the frame's values, the
    catalog they are laid out by, and whether that catalog is new at this tick (a tuple: ten are made every block)."""

    tick: int
    wall_ns: int
    lag_s: float
    values: np.ndarray
    catalog: Catalog
    catalog_changed: bool


def _due_between(every_ticks: int, first_tick: int, end_tick: int) -> bool:
    """Whether a source read every every_ticks ticks is due at some tick in [first_tick, end_tick)."""
    return -(-first_tick // every_ticks) * every_ticks < max(end_tick, first_tick + 1)


class CollectorRegistry:
    """Collects every available source into one vector, in catalog order; a source's new channel list makes a new
    catalog version."""

    def __init__(self, collectors: list[Collector], host: str, cluster: str, interval_s: float,
                 source_intervals: dict[str, float] | None = None, budget_fraction: float = 0.25,
                 clock: Callable[[], float] = time.perf_counter, batch_reads: bool = True):
        self.host, self.cluster, self.interval_s = host, cluster, interval_s
        unknown = sorted(set(source_intervals or {}) - {c.source for c in collectors})
        if unknown:
            raise ValueError(f"--source-interval {unknown[0]!r}: no such source; sources: "
                             f"{', '.join(sorted(c.source for c in collectors))}")
        self.sources = [self._schedule(c, interval_s, source_intervals or {}, budget_fraction)
                        for c in collectors if c.available()]
        self._clock = clock
        self._width = 0
        self._frame = np.empty(0)  # source by source
        self._order: np.ndarray | None = None  # the frame's positions in catalog order; None when they are in it
        self.catalog = Catalog(host, cluster, (), interval_s, version=1)
        self._batch = new_batch() if batch_reads else None
        self._batched: list[tuple[SourceState, ScannedLayout, int]] = []
        self._replan = False
        self._unannounced = False

    @property
    def collectors(self) -> list[Collector]:
        return [s.collector for s in self.sources]

    @staticmethod
    def _schedule(collector: Collector, interval_s: float, overrides: dict[str, float],
                  budget_fraction: float) -> SourceState:
        wanted = overrides.get(collector.source, collector.default_interval_s)
        every = max(1, round(wanted / interval_s)) if wanted else 1
        return SourceState(collector, every, budget_fraction * interval_s * every)

    def sample(self, tick: int = 0) -> tuple[np.ndarray, bool]:
        """Every channel's value in catalog order (held from the last read for sources not due at this tick, NaN
        where unread), and whether the catalog changed."""
        changed = False
        if self._batched:
            trouble = self._batch.read(tick, self._frame)
            if trouble is not None:
                changed |= self._after_batch(*trouble)
        for source in self.sources:
            if source.batch_index < 0 and tick % source.every_ticks == 0:
                changed |= self._read_into(source)
        self._settle_frame(changed)
        return self._in_catalog_order(self._frame), changed

    @property
    def has_scanner(self) -> bool:
        """Whether the compiled scanner was built here (files it can read are read by it)."""
        return self._batch is not None

    @property
    def reads_ticks_in_c(self) -> bool:
        """Whether the compiled loop can keep the schedule: some source is read by the batch."""
        return bool(self._batched)

    def sample_ticks(self, start_ns: int, interval_ns: int, last_tick: int, end_tick: int) -> list[SampledTick]:
        """The ticks after last_tick until end_tick, each read when due by the compiled loop (CLOCK_MONOTONIC,
        tick k due at start_ns + k·interval_ns) without waking Python. The sources their collectors read are read
        once for every tick of the loop they are due at, and hold their values through it: before the loop, or
        after it where they explain load (`Collector.explains_load`). Ends early after a tick whose batch read had
        trouble, which is then handled as sample() does, or when a signal came."""
        due = [source for source in self.sources
               if source.batch_index < 0 and _due_between(source.every_ticks, last_tick + 1, end_tick)]
        changed = False
        for source in due:
            if not source.collector.explains_load:
                changed |= self._read_into(source)
        self._settle_frame(changed)
        capacity = max(1, end_tick - last_tick - 1)
        rows = np.empty((capacity, len(self._frame)))
        rows[0] = self._frame
        ticks, walls, lags = (np.empty(capacity, dtype=np.int64) for _ in range(3))
        catalog, order = self.catalog, self._order
        filled, trouble, _ = self._batch.read_ticks(start_ns, interval_ns, last_tick, end_tick, rows, ticks, walls,
                                                    lags)
        announce = changed or self._unannounced
        self._unannounced = announce and not filled  # a loop a signal ended before its first tick announces nothing
        relaid = self._after_loop(rows[:filled], trouble, due) if filled else False
        in_order = rows[:filled] if order is None else rows[:filled, order]
        sampled = [SampledTick(tick, wall_ns, lag_s, row, catalog, announce and i == 0)
                   for i, (tick, wall_ns, lag_s, row) in enumerate(zip(ticks[:filled].tolist(),
                                                                       walls[:filled].tolist(),
                                                                       (lags[:filled] * 1e-9).tolist(), in_order))]
        if relaid or (filled and trouble is not None):  # the last tick as handled after the loop, in the catalog now
            last = sampled[-1]
            sampled[-1] = SampledTick(last.tick, last.wall_ns, last.lag_s, self._in_catalog_order(self._frame),
                                      self.catalog, last.catalog_changed or relaid)
        return sampled

    def _after_loop(self, rows: np.ndarray, trouble, due: list[SourceState]) -> bool:
        """Take up the loop's last row, handle its trouble and read the sources that explain load into its rows;
        True when a channel list changed."""
        self._frame = rows[-1].copy()
        relaid = self._after_batch(*trouble) if trouble is not None else False
        self._settle_frame(relaid)
        explainers = [source for source in due if source.collector.explains_load]
        return self._read_explanations(explainers, None if relaid else rows) or relaid

    def _in_catalog_order(self, values: np.ndarray) -> np.ndarray:
        """A copy of a frame laid out source by source, in catalog order."""
        return values.copy() if self._order is None else values[self._order]

    def _read_explanations(self, sources: list[SourceState], rows: np.ndarray | None) -> bool:
        """Read, after a loop, the sources that explain load, and let their reading stand for every tick of it (the
        rows, where their layout still holds): the explanation is then never later than the load. True when a
        channel list changed."""
        changed = False
        for source in sources:
            changed |= self._read_into(source)
        if not changed and rows is not None:
            for source in sources:
                rows[:, source.start:source.end] = source.values
        self._settle_frame(changed)
        return changed

    def _settle_frame(self, changed: bool) -> None:
        """Lay the frame out afresh after a channel list changed, else place the sources' fresh values into it."""
        if changed:
            self._keep_batched_values()
            self._rebuild_catalog()
            self._frame = np.concatenate([np.asarray(s.values, dtype=np.float64) for s in self.sources]) \
                if self.sources else np.empty(0)
        else:
            frame = self._frame
            for source in self.sources:
                if source.fresh:
                    frame[source.start:source.end] = source.values
                    source.fresh = False
        if (changed or self._replan) and self._batch is not None:
            self._plan_batch()

    def read_costs(self) -> dict[str, tuple[int, float]]:
        """Reads of each source so far and the seconds they took, by source name (batched reads included)."""
        costs = {s.collector.source: (s.reads, s.cpu_s) for s in self.sources}
        for source, _, _ in self._batched:
            reads, seconds = self._batch.cost(source.batch_index)
            costs[source.collector.source] = (source.reads + reads, source.cpu_s + seconds)
        return costs

    def close(self) -> None:
        for source in self.sources:
            source.collector.close()

    def _read_into(self, source: SourceState) -> bool:
        """Read one source; True when its channel list changed."""
        started = self._clock()
        try:
            reading = source.collector.read()
        except OSError as error:
            source.failures += 1
            source.collector._warn_once("read", "%s: read failed (%s); its channels are NaN until it recovers",
                                        source.collector.source, error)
            source.values, source.fresh = [math.nan] * len(source.names), True
            return False
        changed = reading.names is not source.names and reading.names != source.names
        source.names, source.values, source.fresh = reading.names, reading.values, True
        source.reads += 1
        self._keep_within_budget(source, self._clock() - started)
        return changed

    def _after_batch(self, failed: list[int], slow: list[int]) -> bool:
        """Read again, through their collectors, the files the batch could not vouch for; slow down the batched
        sources that kept running over budget. True when a channel list changed."""
        changed = False
        for index in failed:
            source, scanned, fd = self._batched[index]
            changed |= self._read_into(source)
            self._replan |= source.collector.scan_plan() != (scanned, fd)
        for index in slow:
            source = self._batched[index][0]
            reads, seconds = self._batch.cost(index)
            self._slow_down(source, seconds / max(reads, 1))
            self._batch.schedule(index, source.every_ticks, round(source.budget_s * 1e9))
        return changed

    def _keep_batched_values(self) -> None:
        """Before the frame is laid out afresh: the batched sources' values are those the batch wrote into it."""
        for source, _, _ in self._batched:
            if not source.fresh:
                source.values = self._frame[source.start:source.end].copy()

    def _plan_batch(self) -> None:
        """Give every source whose collector offers a scanned file an entry in the batch, at its place in the frame."""
        for source, _, _ in self._batched:
            reads, seconds = self._batch.cost(source.batch_index)
            source.reads, source.cpu_s = source.reads + reads, source.cpu_s + seconds
            source.batch_index = -1
        self._batch.clear()
        self._batched = []
        for source in self.sources:
            plan = source.collector.scan_plan()
            if plan is None or plan[0].names != source.names:
                continue
            source.batch_index = len(self._batched)
            plan[0].put_into(self._batch, source.batch_index, plan[1], source.start, source.every_ticks,
                             round(source.budget_s * 1e9))
            self._batched.append((source, *plan))
        self._replan = False

    def _rebuild_catalog(self) -> None:
        owner: dict[str, Collector] = {}
        channels: list[Channel] = []
        for source in self.sources:
            source.start, source.end, source.fresh = len(channels), len(channels) + len(source.names), False
            for name in source.names:
                previous = owner.setdefault(name, source.collector)
                if previous is not source.collector:
                    raise DuplicateChannelError(f"channel {name!r} is reported by both {previous.source} "
                                                f"and {source.collector.source}")
                channels.append(source.collector.describe(name))
        self._width = len(channels)
        order = canonical_order([c.name for c in channels])
        self._order = None if order == list(range(len(order))) else np.asarray(order, dtype=np.intp)
        self.catalog = Catalog(self.host, self.cluster, tuple(channels[i] for i in order), self.interval_s)
        log.info("catalog of %s now has %d channels (version %d)", self.host, self._width, self.catalog.version)

    def _keep_within_budget(self, source: SourceState, elapsed_s: float) -> None:
        """Read a source half as often after OVERRUNS_BEFORE_SLOWDOWN reads in a row over its budget (one slow
        read is a hiccup of the machine, not of the source)."""
        source.cpu_s += elapsed_s
        source.overruns_in_a_row = source.overruns_in_a_row + 1 if elapsed_s > source.budget_s else 0
        if source.overruns_in_a_row >= OVERRUNS_BEFORE_SLOWDOWN:
            source.overruns_in_a_row = 0
            self._slow_down(source, elapsed_s)

    def _slow_down(self, source: SourceState, elapsed_s: float) -> None:
        """Read the source half as often, up to MAX_SOURCE_INTERVAL_S between reads."""
        if source.every_ticks * self.interval_s >= MAX_SOURCE_INTERVAL_S:
            return
        source.every_ticks *= 2
        source.budget_s *= 2
        source.slowdowns += 1
        log.warning("%s: a read took %.1f ms, over its budget; now read every %.2f s", source.collector.source,
                    elapsed_s * 1e3, source.every_ticks * self.interval_s)
