"""The table of collectors of one agent, each read at its own interval, and the catalog that orders their channels.

A source read less often than every tick holds its last values in the frames between reads. A source whose reads
take more than its time budget is read less often (its interval doubles, up to a limit), so one slow source cannot
stall the tick.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from producers.collectors.base import Collector, Reading
from schemas.records import Catalog, Channel

log = logging.getLogger(__name__)

MAX_SOURCE_INTERVAL_S = 10.0
OVERRUNS_BEFORE_SLOWDOWN = 3


class DuplicateChannelError(ValueError):
    """Two collectors reported the same channel name."""


@dataclass
class SourceState:
    """How one collector is scheduled and where its channels sit in the frame."""

    collector: Collector
    every_ticks: int
    budget_s: float
    names: tuple[str, ...] = ()
    slots: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.intp))
    reads: int = 0
    failures: int = 0
    slowdowns: int = 0
    overruns_in_a_row: int = 0
    cpu_s: float = 0.0


class CollectorRegistry:
    """Collects every available source into one vector in catalog order; new channels extend the catalog."""

    def __init__(self, collectors: list[Collector], host: str, cluster: str, interval_s: float,
                 source_intervals: dict[str, float] | None = None, budget_fraction: float = 0.25,
                 clock: Callable[[], float] = time.perf_counter):
        self.host, self.cluster, self.interval_s = host, cluster, interval_s
        self.sources = [self._schedule(c, interval_s, source_intervals or {}, budget_fraction)
                        for c in collectors if c.available()]
        self._clock = clock
        self._index: dict[str, int] = {}
        self._owner: dict[str, Collector] = {}
        self._channels: list[Channel] = []
        self._vector = np.empty(0)
        self.catalog = Catalog(host, cluster, (), interval_s, version=1)

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
        """Every channel's value in catalog order (held from the last read for sources not due at this tick,
        NaN where unread), and whether the catalog changed."""
        changed = False
        for source in self.sources:
            if tick % source.every_ticks == 0:
                changed |= self._read_into(source)
        if changed:
            self.catalog = Catalog(self.host, self.cluster, tuple(self._channels), self.interval_s)
            log.info("catalog of %s now has %d channels (version %d)", self.host, len(self._channels),
                     self.catalog.version)
        return self._vector.copy(), changed

    def close(self) -> None:
        for source in self.sources:
            source.collector.close()

    def _read_into(self, source: SourceState) -> bool:
        started = self._clock()
        try:
            reading = source.collector.read()
        except OSError as error:
            source.failures += 1
            source.collector._warn_once("read", "%s: read failed (%s); its channels are NaN until it recovers",
                                        source.collector.source, error)
            self._vector[source.slots] = np.nan
            return False
        changed = reading.names is not source.names and self._relayout(source, reading)
        self._vector[source.slots] = reading.values
        source.reads += 1
        self._keep_within_budget(source, self._clock() - started)
        return changed

    def _relayout(self, source: SourceState, reading: Reading) -> bool:
        """Map a source's new names tuple to frame slots, adding channels never seen before."""
        vanished = set(source.names) - set(reading.names)
        for name in reading.names:
            owner = self._owner.setdefault(name, source.collector)
            if owner is not source.collector:
                raise DuplicateChannelError(f"channel {name!r} is reported by both {owner.source} "
                                            f"and {source.collector.source}")
        new = [name for name in reading.names if name not in self._index]
        for name in new:
            self._index[name] = len(self._channels)
            self._channels.append(source.collector.describe(name))
        if new:
            self._vector = np.concatenate([self._vector, np.full(len(new), np.nan)])
        self._vector[[self._index[n] for n in vanished]] = np.nan
        source.names = reading.names
        source.slots = np.fromiter((self._index[n] for n in reading.names), dtype=np.intp, count=len(reading.names))
        return bool(new)

    def _keep_within_budget(self, source: SourceState, elapsed_s: float) -> None:
        """Read a source half as often after OVERRUNS_BEFORE_SLOWDOWN reads in a row over its budget (one slow
        read is a hiccup of the machine, not of the source)."""
        source.cpu_s += elapsed_s
        source.overruns_in_a_row = source.overruns_in_a_row + 1 if elapsed_s > source.budget_s else 0
        if source.overruns_in_a_row < OVERRUNS_BEFORE_SLOWDOWN or \
                source.every_ticks * self.interval_s >= MAX_SOURCE_INTERVAL_S:
            return
        source.overruns_in_a_row = 0
        source.every_ticks *= 2
        source.budget_s *= 2
        source.slowdowns += 1
        log.warning("%s: a read took %.1f ms, over its budget; now read every %.2f s", source.collector.source,
                    elapsed_s * 1e3, source.every_ticks * self.interval_s)
