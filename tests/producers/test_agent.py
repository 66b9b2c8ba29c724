"""The agent's start-up settle: sources are read from the first tick, but nothing reaches the sink until the settle
time has passed, and then the catalog comes first and frames are numbered from zero. Frames are handed out a block
at a time while the compiled scanner keeps the schedule, every tick in order."""

import numpy as np
import pytest

from producers.agent import Agent, AgentSettings
from producers.sampler import block_aligned_start, block_margin_ns, off_block_phase
from producers.collectors.meminfo import MemInfoCollector
from schemas.records import Catalog, Frame
from tests.producers.test_registry import FixedCollector

SECOND = 1_000_000_000
END_OF_BLOCK = "end of block"


class ListSink:
    def __init__(self):
        self.items = []

    def on_catalog(self, catalog: Catalog) -> None:
        self.items.append(catalog)

    def on_frame(self, frame: Frame) -> None:
        self.items.append(frame)

    def end_block(self) -> None:
        self.items.append(END_OF_BLOCK)


def _agent(settle_s: float, clock: list[int], sink: ListSink) -> Agent:
    collector = FixedCollector("fixed", {"x": 1.0})
    return Agent(AgentSettings(host="h1", settle_s=settle_s), sink, [collector], wall_clock_ns=lambda: clock[0])


def test_nothing_is_handed_out_while_settling_then_the_catalog_comes_first():
    clock, sink = [100 * SECOND], ListSink()
    agent = _agent(2.0, clock, sink)
    agent.settle_from(clock[0])
    for tick in range(30):
        clock[0] = 100 * SECOND + tick * SECOND // 10
        agent.sample_once()
    handed = sink.items
    assert isinstance(handed[0], Catalog)
    frames = [item for item in handed if isinstance(item, Frame)]
    assert len(frames) == 10 and frames[0].timestamp_ns == 102 * SECOND
    assert [frame.sequence for frame in frames] == list(range(10))


def test_without_a_settle_time_the_first_tick_is_handed_out():
    clock, sink = [5 * SECOND], ListSink()
    agent = _agent(0.0, clock, sink)
    agent.settle_from(clock[0])
    assert agent.sample_once() is not None and isinstance(sink.items[0], Catalog)


def test_the_settle_time_is_bounded():
    with pytest.raises(ValueError, match="settle time"):
        AgentSettings(host="h1", settle_s=7200)


def _run(agent: Agent, frames_wanted: int, sink: ListSink) -> None:
    agent.run(lambda: sum(isinstance(item, Frame) for item in sink.items) >= frames_wanted)


def test_with_the_compiled_scanner_every_tick_is_handed_out_in_order_once_per_block(tmp_path):
    (tmp_path / "meminfo").write_text("MemTotal: 100 kB\n")
    sink = ListSink()
    agent = Agent(AgentSettings(host="h1", interval_s=0.01, publish_every_s=0.05), sink, [MemInfoCollector(tmp_path)])
    _run(agent, 12, sink)
    frames = [item for item in sink.items if isinstance(item, Frame)]
    assert isinstance(sink.items[0], Catalog) and sum(isinstance(item, Catalog) for item in sink.items) == 1
    assert len(frames) in (15, 16), "frames are handed out a block at a time: tick 0, then blocks of five"
    assert [frame.sequence for frame in frames] == list(range(len(frames)))
    read_ms = np.array([frame.timestamp_ns - frames[0].timestamp_ns for frame in frames]) / 1e6
    gaps_ms, phase_ms = np.diff(read_ms), read_ms % 10
    off_phase_ms = (phase_ms - np.median(phase_ms) + 5) % 10 - 5
    assert gaps_ms.min() > 0 and abs(np.median(gaps_ms) - 10) < 2, "the ticks were not read every interval"
    assert np.median(np.abs(off_phase_ms)) < 2, "a late tick moved the schedule instead of the next being on time"
    total = [channel.name for channel in sink.items[0].channels].index("mem.MemTotal")
    assert all(frame.values[total] == 100 * 1024 for frame in frames) and agent.stats.ticks == len(frames)
    blocks = "".join("F" if isinstance(item, Frame) else "|" for item in sink.items[1:]).split("|")
    assert blocks[0] == "F" and all(1 <= len(block) <= 5 for block in blocks[1:-1]), \
        "each block (five ticks, fewer when one is skipped) is told as one, after tick 0's frame"


def test_each_block_ends_with_the_tick_just_after_a_whole_multiple_of_its_length(tmp_path):
    (tmp_path / "meminfo").write_text("MemTotal: 100 kB\n")
    sink = ListSink()
    agent = Agent(AgentSettings(host="h1", interval_s=0.01, publish_every_s=0.05), sink, [MemInfoCollector(tmp_path)])
    _run(agent, 40, sink)
    items = sink.items[1:]
    last_of_block = [item for item, after in zip(items, items[1:]) if isinstance(item, Frame) and after == END_OF_BLOCK]
    phase_ms = np.array([frame.timestamp_ns % (50 * SECOND // 1000) for frame in last_of_block[1:]]) / 1e6
    assert len(phase_ms) >= 6
    assert np.median(phase_ms) < 5, f"blocks' last ticks read {phase_ms} ms after a multiple of 50 ms, not just after"


def test_an_aligned_schedule_keeps_its_phase_wherever_it_resumes():
    interval, ticks, wall_offset = 100_000_000, 10, 1_700_000_000_123_456_789
    for now in (0, 37_000_001, 999_999_999, 5 * SECOND + 1):
        for next_tick in (1, 10, 2_000):
            start = block_aligned_start(now, now + wall_offset, interval, ticks, next_tick)
            due = start + next_tick * interval - now
            assert interval <= due < interval + SECOND, "the next tick is due an interval from now, within a block"
            last_of_block = next_tick + (ticks - 1 - next_tick) % ticks  # blocks end on multiples of ticks
            last_tick_wall = start + last_of_block * interval + wall_offset
            assert last_tick_wall % SECOND == block_margin_ns(interval)
            assert not off_block_phase(last_tick_wall, interval, ticks)
    assert off_block_phase(3 * SECOND + 400_000_000, interval, ticks)


def test_without_a_file_the_scanner_reads_the_agent_samples_every_tick_itself():
    counts, sink = iter(range(1000)), ListSink()

    class CountingCollector(FixedCollector):
        def collect(self):
            self.readings = {"reads": float(next(counts))}
            return super().collect()

    agent = Agent(AgentSettings(host="h1", interval_s=0.01, publish_every_s=1.0), sink,
                  [CountingCollector("counting", {})])
    _run(agent, 5, sink)
    frames = [item for item in sink.items if isinstance(item, Frame)]
    reads = agent.registry.catalog.names.index("reads")
    assert len(frames) == 5 and len({frame.values[reads] for frame in frames}) == 5


def test_how_often_frames_are_handed_out_is_bounded():
    with pytest.raises(ValueError, match="publish every"):
        AgentSettings(host="h1", publish_every_s=30)
