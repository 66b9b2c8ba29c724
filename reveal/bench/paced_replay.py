"""Replays a fleet of synthetic hosts through Kafka in real time, for the pipeline benchmark.

Frames are encoded ahead of the clock (the first minute before it starts, each later minute on a thread while the
one before is published), so publishing costs little more than handing bytes to the client: what the benchmark
measures is the broker and the workers, not the producer, and a run of an hour (a soak) holds only a few minutes of
frames in memory. Frames of all hosts share a tick, as agents on synchronised hosts do, and are published at
`start + tick × interval`.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from confluent_kafka import Producer

from producers.publisher import FRAME_LINGER_MS, producer_config
from producers.synthetic import StepChange, synthetic_catalog, synthetic_frames
from schemas.records import encode_catalog, encode_frame
from schemas.topics import TopicNames

CHUNK_S = 60.0  # how much of the run is encoded at a time
STEP_OFFSET = 30.0
STEPPED_SHARE = 0.25  # of a host's CPU gauges at most: the detectors average over every feature, so one channel in
                      # 700 is too faint to flag, while many CPUs 30 points busier is a contention episode


@dataclass(frozen=True)
class FleetSettings:
    """The synthetic fleet: how many hosts, how wide, how fast, for how long, and which hosts change late on."""

    hosts: int
    channels: int = 700
    interval_s: float = 0.1
    duration_s: float = 60.0
    step_at_s: float = 42.0
    stepped_hosts: int = 1
    seed: int = 0
    publish_every_s: float = 1.0

    @property
    def ticks(self) -> int:
        return max(1, round(self.duration_s / self.interval_s))

    @property
    def frames_per_message(self) -> int:
        """Ticks each host sends as one message, as an agent publishing every `publish_every_s` does."""
        return max(1, round(self.publish_every_s / self.interval_s))


@dataclass
class EncodedFleet:
    """Catalog messages, and per tick the frame message of every host, all as (key, value) ready to send."""

    start_ns: int
    catalogs: list[tuple[bytes, bytes]] = field(default_factory=list)
    ticks: list[list[tuple[bytes, bytes]]] = field(default_factory=list)

    @property
    def frame_bytes(self) -> int:
        return sum(len(value) for tick in self.ticks for _, value in tick)


@dataclass
class ReplayReport:
    """What the replay did: when it started (wall clock), how late it ran against its schedule, what it sent."""

    started_ns: int = 0
    frames: int = 0
    frame_bytes: int = 0
    max_behind_s: float = 0.0
    wire_bytes: int = 0
    undelivered: int = 0


def host_name(index: int) -> str:
    return f"bench-host-{index:03d}"


def stepped_channels(catalog, start_s: float, slot: int = 0, slots: int = 1) -> tuple[StepChange, ...]:
    """The step change of a stepped host: CPU gauges of its own (slot `slot` of `slots` disjoint blocks, at most a
    quarter of them, at least one) become 30 points busier. Each host's fault is its own: a change several hosts of
    a cluster share at the same instant moved with their job, and the cluster stage rightly tells no host of it."""
    gauges = [name for name, kind in zip(catalog.names, catalog.kinds) if kind == "gauge"]
    width = max(1, min(round(len(gauges) * STEPPED_SHARE), len(gauges) // max(slots, 1)))
    first = (slot * width) % max(len(gauges) - width + 1, 1)
    return tuple(StepChange(name, start_s, STEP_OFFSET) for name in gauges[first:first + width])


def encode_fleet(settings: FleetSettings, start_ns: int, first_tick: int = 0, ticks: int | None = None) -> EncodedFleet:
    """Every host's catalog and frames (those of `ticks` ticks from `first_tick`, or all), encoded; the first
    `stepped_hosts` hosts carry a step change."""
    count = settings.ticks - first_tick if ticks is None else min(ticks, settings.ticks - first_tick)
    fleet = EncodedFleet(start_ns, ticks=[[] for _ in range(count)])
    gauges = int(settings.channels * 0.6)
    for index in range(settings.hosts):
        catalog = synthetic_catalog(host_name(index), "bench", gauges=gauges,
                                    counters=settings.channels - gauges - 1, interval_s=settings.interval_s)
        steps = stepped_channels(catalog, settings.step_at_s, index, settings.stepped_hosts) \
            if index < settings.stepped_hosts else ()
        key = catalog.host.encode()
        fleet.catalogs.append((key, encode_catalog(catalog)))
        frames = synthetic_frames(catalog, start_ns, count, seed=settings.seed + index, steps=steps,
                                  first_tick=first_tick)
        for tick, frame in zip(fleet.ticks, frames):
            tick.append((key, encode_frame(frame)))
    return fleet


def encoded_ticks(settings: FleetSettings, start_ns: int, first: EncodedFleet) -> Iterator[list[tuple[bytes, bytes]]]:
    """Every tick's frames: those of `first` (the run's first chunk), then each later chunk's, encoded on a thread
    at most one chunk ahead of the tick being published."""
    chunk = max(1, len(first.ticks))
    ahead: queue.Queue = queue.Queue(maxsize=1)

    def encode_later_chunks() -> None:
        for first_tick in range(chunk, settings.ticks, chunk):
            ahead.put(encode_fleet(settings, start_ns, first_tick, chunk).ticks)
        ahead.put(None)

    threading.Thread(target=encode_later_chunks, name="encode-ahead", daemon=True).start()
    yield from first.ticks
    while (ticks := ahead.get()) is not None:
        yield from ticks


def publish_paced(producer: Producer, topics: TopicNames, catalogs: list[tuple[bytes, bytes]],
                  ticks: Iterable[list[tuple[bytes, bytes]]], interval_s: float,
                  frames_per_message: int = 1) -> ReplayReport:
    """Catalogs first, then the frames at their ticks' times on the wall clock, each host's `frames_per_message`
    ticks as one message sent at the last of them; returns when the last tick is sent. As an agent does, tick 0 goes
    alone and each later block ends with a tick on a multiple of `frames_per_message`: with the run starting on a
    whole second, a block of a second ends with the frame that closes a window."""
    for key, value in catalogs:
        producer.produce(topics.catalog, value, key=key)
    producer.flush(30)
    report = ReplayReport(started_ns=time.time_ns())
    started = time.monotonic()
    block: dict[bytes, list[bytes]] = {}
    for index, tick in enumerate(ticks):
        delay = started + index * interval_s - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        report.max_behind_s = max(report.max_behind_s, -delay)
        for key, value in tick:
            block.setdefault(key, []).append(value)
            report.frames += 1
            report.frame_bytes += len(value)
        if index % frames_per_message == 0:
            _send_block(producer, topics.samples, block)
        producer.poll(0)
    _send_block(producer, topics.samples, block)
    return report


def _send_block(producer: Producer, topic: str, block: dict[bytes, list[bytes]]) -> None:
    """Each host's frames of the block as one message (encoded frames joined are the block's message); empties it."""
    for key, values in block.items():
        _produce(producer, topic, key, b"".join(values))
    block.clear()


def _produce(producer: Producer, topic: str, key: bytes, value: bytes) -> None:
    while True:
        try:
            producer.produce(topic, value, key=key)
            return
        except BufferError:
            producer.poll(0.05)  # the client's queue is full: let deliveries drain it


def fleet_batching(settings: FleetSettings) -> dict:
    """Producer settings under which the one producer replaying a fleet hands the workers record batches of the
    size the fleet's agents send. An agent sending blocks sends one message a second, alone in its batch; one sending
    a frame per message gathers its frames of FRAME_LINGER_MS. Left to itself the replaying producer would pack the
    messages all hosts send at one instant into a few batches, which no fleet sends."""
    if settings.frames_per_message > 1:
        return {"batch.num.messages": 1}
    return {"batch.num.messages": max(1, round(FRAME_LINGER_MS / 1000 / settings.interval_s))}


def replay_fleet(bootstrap: str, prefix: str, settings: FleetSettings, start_ns: int, ready, go, results) -> None:
    """Process entry point: encode the fleet's first chunk, say so on `ready`, wait for `go`, replay, put the
    report on `results`. The client's statistics give the bytes it really sent, after compression."""
    first = encode_fleet(settings, start_ns, 0, round(CHUNK_S / settings.interval_s))
    statistics: list[dict] = []
    producer = Producer(producer_config(bootstrap, {"statistics.interval.ms": 1000, **fleet_batching(settings),
                                                    "stats_cb": lambda text: statistics.append(json.loads(text))},
                                        settings.frames_per_message))
    ready.set()
    go.wait()
    report = publish_paced(producer, TopicNames(prefix), first.catalogs, encoded_ticks(settings, start_ns, first),
                           settings.interval_s, settings.frames_per_message)
    report.undelivered = producer.flush(60)
    time.sleep(1.2)  # one more statistics interval, so the last batches are counted
    producer.poll(0)
    if statistics:
        report.wire_bytes = sum(broker["txbytes"] for broker in statistics[-1]["brokers"].values())
    results.put(report)
