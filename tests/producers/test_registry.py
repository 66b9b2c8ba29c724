import math

import pytest

from producers.collectors.base import Collector
from producers.registry import CollectorRegistry, DuplicateChannelError


class FixedCollector(Collector):
    """A collector whose readings the test sets directly."""

    def __init__(self, source: str, readings: dict[str, float]):
        super().__init__()
        self.source, self.readings = source, readings

    def collect(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for name, value in self.readings.items():
            self._put(out, name, "", value, "cpu", "gauge", "")
        return out


def test_first_sample_builds_the_catalog_in_collector_order():
    registry = CollectorRegistry([FixedCollector("a", {"x": 1.0, "y": 2.0}), FixedCollector("b", {"z": 3.0})],
                                 "h", "c", 0.1)
    values, changed = registry.sample()
    assert changed and values == [1.0, 2.0, 3.0]
    assert registry.catalog.names == ("x", "y", "z")
    assert registry.sample() == ([1.0, 2.0, 3.0], False)


def test_new_channel_extends_catalog_and_vanished_channel_reads_nan():
    source = FixedCollector("a", {"x": 1.0})
    registry = CollectorRegistry([source], "h", "c", 0.1)
    registry.sample()
    first_version = registry.catalog.version
    source.readings = {"eth1": 5.0}
    values, changed = registry.sample()
    assert changed and registry.catalog.version != first_version
    assert math.isnan(values[0]) and values[1] == 5.0


def test_two_collectors_reporting_one_channel_are_rejected_naming_both():
    registry = CollectorRegistry([FixedCollector("a", {"x": 1.0}), FixedCollector("b", {"x": 2.0})], "h", "c", 0.1)
    with pytest.raises(DuplicateChannelError, match="both a and b"):
        registry.sample()


def test_unavailable_collector_is_left_out_once(tmp_path):
    from producers.collectors.diskstats import DiskStatsCollector

    registry = CollectorRegistry([DiskStatsCollector(tmp_path), FixedCollector("a", {"x": 1.0})], "h", "c", 0.1)
    assert [c.source for c in registry.collectors] == ["a"]
