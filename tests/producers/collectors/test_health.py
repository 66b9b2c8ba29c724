"""AgentHealthCollector: the agent's own CPU time and memory, and its providers' counters as channels of known kinds."""

import mmap

from producers.collectors.health import AgentHealthCollector


def test_own_cpu_time_and_memory_in_use_are_read_with_their_units():
    collector = AgentHealthCollector()
    values = collector.collect()
    assert set(values) == {"agent.cpu_time_us", "agent.rss_bytes"}
    assert values["agent.cpu_time_us"] > 0 and values["agent.rss_bytes"] > 1 << 20
    cpu = collector.describe("agent.cpu_time_us")
    assert (cpu.subsystem, cpu.kind, cpu.unit, cpu.device) == ("agent", "counter", "us", "")
    assert (collector.describe("agent.rss_bytes").kind, collector.describe("agent.rss_bytes").unit) == (
        "gauge", "bytes")


def test_the_providers_counters_become_float_channels_of_their_known_kinds():
    ticks = {"agent.tick_lag_ms": 3, "agent.ticks_skipped": 1}
    publisher = {"agent.frames_sent": 120, "agent.dropped_frames": 0, "agent.something_new": 5}
    collector = AgentHealthCollector(lambda: ticks, lambda: publisher)
    values = collector.collect()
    assert values["agent.tick_lag_ms"] == 3.0 and isinstance(values["agent.tick_lag_ms"], float)
    assert values["agent.frames_sent"] == 120.0 and values["agent.something_new"] == 5.0
    kinds = [collector.describe(name).kind for name in ("agent.tick_lag_ms", "agent.ticks_skipped",
                                                        "agent.frames_sent", "agent.dropped_frames")]
    assert kinds == ["gauge", "event", "counter", "event"]
    unknown = collector.describe("agent.something_new")
    assert (unknown.kind, unknown.unit) == ("gauge", "")


def test_the_providers_are_asked_at_every_read_and_the_source_is_read_once_a_second():
    asked = []
    collector = AgentHealthCollector(lambda: asked.append(1) or {"agent.spool_records": float(len(asked))})
    assert collector.collect()["agent.spool_records"] == 1.0
    assert collector.collect()["agent.spool_records"] == 2.0
    assert (AgentHealthCollector.source, AgentHealthCollector.default_interval_s) == ("agent", 1.0)


def test_memory_in_use_is_read_again_at_every_read_through_one_kept_file():
    collector = AgentHealthCollector()
    first = collector.collect()["agent.rss_bytes"]
    with mmap.mmap(-1, 64 << 20) as ballast:  # fresh pages: a heap chunk freed earlier may already be resident
        ballast[::mmap.PAGESIZE] = b"\1" * (len(ballast) // mmap.PAGESIZE)
        grown = collector.collect()["agent.rss_bytes"]
    collector.close()
    assert grown >= first + (60 << 20)
