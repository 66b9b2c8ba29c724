"""The host agent: samples every collector on a drift-free schedule and hands out frames and catalogs, tick by tick
or, where the compiled scanner keeps the schedule, a block of ticks at a time."""

from __future__ import annotations

import gc
import logging
import socket
import time
from dataclasses import dataclass
from typing import Callable, Protocol

from producers.collectors.base import Collector
from producers.collectors.health import AgentHealthCollector
from producers.collectors.own_footprint import OwnProcessesCollector, OwnSocketsCollector, OwnStorageCollector
from producers.registry import CollectorRegistry
from producers.sampler import TickStats, block_aligned_start, block_end, off_block_phase, run_schedule
from producers.source_table import default_collectors
from schemas.agent_records import Catalog, Frame

log = logging.getLogger(__name__)


class FrameSink(Protocol):
    """Where frames go: the Kafka publisher, the embedded engine, or a file."""

    def on_catalog(self, catalog: Catalog) -> None: ...

    def on_frame(self, frame: Frame) -> None: ...

    def end_block(self) -> None:
        """The frames handed out since the last call were sampled as one block (a sink may send them together)."""


class FanOutSink:
    """Hands every catalog and frame to several sinks in turn: publish to Kafka and record to a file at once.
    The first sink's health is the agent's."""

    def __init__(self, *sinks: FrameSink):
        self.sinks = sinks
        self.health = getattr(sinks[0], "health", dict)

    def on_catalog(self, catalog: Catalog) -> None:
        for sink in self.sinks:
            sink.on_catalog(catalog)

    def on_frame(self, frame: Frame) -> None:
        for sink in self.sinks:
            sink.on_frame(frame)

    def end_block(self) -> None:
        for sink in self.sinks:
            sink.end_block()


@dataclass(frozen=True)
class AgentSettings:
    host: str = socket.gethostname()
    cluster: str = "default"
    interval_s: float = 0.1
    procfs: str = "/proc"
    sysfs: str = "/sys"
    source_intervals: tuple[tuple[str, float], ...] = ()
    cgroup_parent: str = ""
    source_groups: tuple[str, ...] = ()
    net_procfs: str = ""
    settle_s: float = 0.0
    # Reveal's data folder on this host (`reveal run`), whose page cache is Reveal's; "" where it stores elsewhere.
    data_dir: str = ""
    # Seconds of ticks the compiled scanner keeps the schedule for before Python hands their frames out together:
    # Python and the Kafka client wake once per block instead of once per tick. 0 (or one interval): every tick.
    publish_every_s: float = 1.0

    @property
    def ticks_per_block(self) -> int:
        """Ticks handed out together; 1 or less: tick by tick."""
        return round(self.publish_every_s / self.interval_s)

    def __post_init__(self):
        if not 0 <= self.settle_s <= 3600:
            raise ValueError(f"settle time {self.settle_s} s is outside the allowed 0–3600 s")
        if not 0 <= self.publish_every_s <= 10:
            raise ValueError(f"publish every {self.publish_every_s} s is outside the allowed 0–10 s")
        if not 0.005 <= self.interval_s <= 60:
            raise ValueError(f"interval {self.interval_s} s is outside the allowed 0.005–60 s")
        if not self.host:
            raise ValueError("host name must not be empty")


GARBAGE_COLLECTION_EVERY_S = 60.0


def quiet_garbage_collector() -> None:
    """Take the cyclic garbage collector out of the ticks; the agent collects once a minute instead.

    A tick allocates thousands of short-lived, acyclic objects (tokens, floats) that reference counting frees; the
    collector's automatic runs cost about half of the agent's CPU on them. Objects alive after start-up are frozen
    out of collections altogether, and `collect_garbage` runs a full collection between ticks now and then, so a
    reference cycle made by a library is still freed.
    """
    gc.freeze()
    gc.disable()


def collect_garbage() -> None:
    gc.collect()


class Agent:
    """Turns collector readings into numbered frames, announcing the catalog before the first frame and on change.

    During the first `settle_s` of a run the agent samples but hands out nothing: its own start-up (imports, caches
    filling, the first slow reads) then never reaches a baseline downstream.
    """

    def __init__(self, settings: AgentSettings, sink: FrameSink, collectors: list[Collector] | None = None,
                 wall_clock_ns: Callable[[], int] = time.time_ns):
        self.settings = settings
        self.sink = sink
        self.sequence = 0
        self.last_values = None  # the latest frame's values, for --metrics-channels
        self.stats = TickStats()
        sources = collectors if collectors is not None else default_collectors(
            settings.procfs, settings.sysfs, settings.cgroup_parent, settings.source_groups, settings.net_procfs)
        health = AgentHealthCollector(self._tick_health, getattr(sink, "health", dict))
        own = [OwnProcessesCollector(procfs=settings.procfs), OwnSocketsCollector(settings.procfs, settings.net_procfs),
               *([OwnStorageCollector(settings.data_dir, settings.procfs)] if settings.data_dir else [])]
        self.registry = CollectorRegistry([*sources, health, *own], settings.host, settings.cluster, settings.interval_s,
                                          dict(settings.source_intervals))
        self._wall_clock_ns = wall_clock_ns
        self._ticks = 0
        self._catalog_pending = False
        self._publish_from_ns = 0
        self._last_due_wall_ns = 0  # when the last tick the scanner read was due, on the wall clock

    def sample_once(self) -> Frame | None:
        """Read every source once and hand the frame (and a changed catalog first) to the sink; None while the
        agent is still settling."""
        timestamp_ns = self._wall_clock_ns()
        values, catalog_changed = self.registry.sample(self._ticks)
        self._ticks += 1
        return self._hand_out(timestamp_ns, values, self.registry.catalog, catalog_changed)

    def sample_block(self, start_ns: int, last_tick: int, end_tick: int) -> int:
        """Let the compiled scanner keep the schedule from the tick after last_tick until end_tick, then hand out
        the frames of the ticks it read; returns the last tick read (last_tick when none was)."""
        interval_ns = round(self.settings.interval_s * 1e9)
        for sampled in self.registry.sample_ticks(start_ns, interval_ns, last_tick, end_tick):
            self.stats.note(sampled.tick, sampled.lag_s)
            self._ticks += 1
            self._hand_out(sampled.wall_ns, sampled.values, sampled.catalog, sampled.catalog_changed)
            last_tick = sampled.tick
            self._last_due_wall_ns = sampled.wall_ns - round(sampled.lag_s * 1e9)
        return last_tick

    def _aligned_start(self, block_ticks: int, next_tick: int) -> int:
        """The schedule's start for blocks that end just after whole multiples of their length (sampler.py)."""
        interval_ns = round(self.settings.interval_s * 1e9)
        return block_aligned_start(time.monotonic_ns(), time.time_ns(), interval_ns, block_ticks, next_tick)

    def _hand_out(self, timestamp_ns: int, values, catalog: Catalog, catalog_changed: bool) -> Frame | None:
        self._catalog_pending |= catalog_changed
        if timestamp_ns < self._publish_from_ns:
            return None
        if self._catalog_pending:
            self._catalog_pending = False
            self.sink.on_catalog(catalog)
        frame = Frame(self.settings.host, self.settings.cluster, timestamp_ns, self.sequence, catalog.version, values)
        self.sequence += 1
        self.last_values = values
        self.sink.on_frame(frame)
        return frame

    def settle_from(self, start_ns: int) -> None:
        """Hand out nothing until settle_s after start_ns: the sources are read, the frames dropped."""
        self._publish_from_ns = start_ns + round(self.settings.settle_s * 1e9)
        if self.settings.settle_s:
            log.info("agent: settling for %g s before the first frame is handed out", self.settings.settle_s)

    def close(self) -> None:
        self.registry.close()

    def _tick_health(self) -> dict[str, float]:
        return {"agent.tick_lag_ms": self.stats.last_lag_s * 1e3, "agent.ticks_skipped": float(self.stats.skipped)}

    def run(self, should_stop: Callable[[], bool], report_every_s: float = 60.0) -> TickStats:
        """Sample at the configured interval until should_stop() says so, logging progress now and then."""
        log.info("agent %s (cluster %s) sampling every %.3f s from %d sources: %s", self.settings.host,
                 self.settings.cluster, self.settings.interval_s, len(self.registry.sources),
                 ", ".join(f"{s.collector.source} every {s.every_ticks * self.settings.interval_s:g} s"
                           for s in self.registry.sources))
        report_ticks = max(1, round(report_every_s / self.settings.interval_s))
        quiet_garbage_collector()
        self.settle_from(self._wall_clock_ns())

        collect_ticks = max(1, round(GARBAGE_COLLECTION_EVERY_S / self.settings.interval_s))
        block_ticks = self.settings.ticks_per_block

        def now_and_then(index: int) -> None:
            if index and index % collect_ticks == 0:
                collect_garbage()
            if index and index % report_ticks == 0:
                log.info("agent: %d frames, %d ticks skipped, last tick %.1f ms late, worst %.1f ms",
                         self.sequence, self.stats.skipped, self.stats.last_lag_s * 1e3, self.stats.max_lag_s * 1e3)

        def tick(index: int, due: float) -> None:
            self.sample_once()
            now_and_then(index)

        start_ns, last_tick = time.monotonic_ns(), -1
        if block_ticks > 1 and self.registry.has_scanner and not should_stop():
            start_ns = self._aligned_start(block_ticks, next_tick=1)
            self.stats.note(0, 0.0)
            tick(0, start_ns * 1e-9)  # lays the frame out and gives the scanner the files it can read
            last_tick = 0
            if self.registry.reads_ticks_in_c:
                self.sink.end_block()
                return self._run_in_blocks(start_ns, block_ticks, should_stop, now_and_then)
        return run_schedule(self.settings.interval_s, tick, should_stop, stats=self.stats, start=start_ns * 1e-9,
                            last_tick=last_tick)

    def _run_in_blocks(self, start_ns: int, block_ticks: int, should_stop: Callable[[], bool],
                       now_and_then: Callable[[int], None]) -> TickStats:
        """The schedule kept by the compiled scanner after tick 0, block_ticks ticks at a time, each block ending
        on a multiple of block_ticks, just after a whole multiple of its length on the wall clock (realigned when
        that clock is stepped); Python wakes once per block to read its own sources and hand out frames."""
        log.info("agent: the compiled scanner keeps the schedule; frames are handed out every %g s",
                 block_ticks * self.settings.interval_s)
        interval_ns, last_tick = round(self.settings.interval_s * 1e9), 0
        while not should_stop():
            before = last_tick
            last_tick = self.sample_block(start_ns, last_tick, block_end(last_tick, block_ticks))
            self.sink.end_block()
            if (last_tick + 1) % block_ticks == 0 and off_block_phase(self._last_due_wall_ns, interval_ns, block_ticks):
                start_ns = self._aligned_start(block_ticks, next_tick=last_tick + 1)
                log.info("agent: the wall clock moved; blocks realigned to end just after whole multiples of %g s",
                         block_ticks * self.settings.interval_s)
            for index in range(before + 1, last_tick + 1):
                now_and_then(index)
        return self.stats
