"""The engine's view of a host's channels: one kind and subsystem per channel, counters and events cumulative,
static channels left out of scoring, and the bytes or seconds one unit of a memory level or a time counter is."""

import pytest

from schemas.records import Catalog, Channel
from stream_jobs.engine.channels import PAGE_BYTES, ChannelTable


def test_every_channel_needs_a_kind_and_a_subsystem_and_units_when_given():
    with pytest.raises(ValueError, match="one entry per channel"):
        ChannelTable(("a", "b"), ("gauge",), ("cpu", "cpu"))
    with pytest.raises(ValueError, match="units, when given"):
        ChannelTable(("a",), ("gauge",), ("cpu",), ("bytes", "s"))


def test_counters_and_events_are_cumulative_and_static_channels_are_not_scored():
    table = ChannelTable(("a", "b", "c", "d"), ("gauge", "counter", "event", "static"), ("cpu",) * 4)
    assert len(table) == 4
    assert table.cumulative.tolist() == [False, True, True, False]
    assert table.scored.tolist() == [True, True, True, False]


def test_memory_levels_and_time_counters_carry_the_size_of_their_unit():
    table = ChannelTable(("mem.used", "vm.nr_free", "net.tx_bytes", "cpu.user", "cgroup.cpu_usec", "psi.total_us"),
                         ("gauge", "gauge", "counter", "counter", "counter", "gauge"), ("memory",) * 2 + ("cpu",) * 4,
                         ("bytes", "pages", "bytes", "ms", "usec", "us"))
    assert table.bytes_per_unit.tolist() == [1.0, PAGE_BYTES, 0.0, 0.0, 0.0, 0.0]
    assert table.seconds_per_unit.tolist() == [0.0, 0.0, 0.0, 1e-3, 1e-6, 0.0]
    without_units = ChannelTable(("mem.used",), ("gauge",), ("memory",))
    assert without_units.bytes_per_unit.tolist() == [0.0] and without_units.seconds_per_unit.tolist() == [0.0]


def test_a_catalogs_table_keeps_its_channels_in_order():
    catalog = Catalog("h", "c", (Channel("cpu.busy", "cpu", "gauge", "pct"), Channel("net.tx", "network", "counter",
                                                                                      "bytes")))
    table = ChannelTable.of_catalog(catalog)
    assert table == ChannelTable(("cpu.busy", "net.tx"), ("gauge", "counter"), ("cpu", "network"), ("pct", "bytes"))
