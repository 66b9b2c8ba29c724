"""The agent's start-up settle: sources are read from the first tick, but nothing reaches the sink until the settle
time has passed, and then the catalog comes first and frames are numbered from zero."""

import pytest

from producers.agent import Agent, AgentSettings
from schemas.records import Catalog, Frame
from tests.producers.test_registry import FixedCollector

SECOND = 1_000_000_000


class ListSink:
    def __init__(self):
        self.items = []

    def on_catalog(self, catalog: Catalog) -> None:
        self.items.append(catalog)

    def on_frame(self, frame: Frame) -> None:
        self.items.append(frame)


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
