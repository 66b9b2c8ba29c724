"""CollectorRegistry: the catalog in canonical order whatever order the collectors list their channels in, a new
version on change, duplicate channels refused, and unavailable, slow and failing sources."""

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


def test_first_sample_builds_the_catalog():
    registry = CollectorRegistry([FixedCollector("a", {"x": 1.0, "y": 2.0}), FixedCollector("b", {"z": 3.0})],
                                 "h", "c", 0.1)
    values, changed = registry.sample()
    assert changed and values.tolist() == [1.0, 2.0, 3.0]
    assert registry.catalog.names == ("x", "y", "z")
    values, changed = registry.sample()
    assert values.tolist() == [1.0, 2.0, 3.0] and not changed


def test_the_same_channels_listed_in_another_order_make_the_same_catalog_and_frames():
    first = CollectorRegistry([FixedCollector("a", {"irq.RES.cpu0": 1.0, "irq.36.cpu0": 2.0, "cpu10": 3.0}),
                               FixedCollector("b", {"cpu2": 4.0})], "h", "c", 0.1)
    second = CollectorRegistry([FixedCollector("b", {"cpu2": 4.0}),
                                FixedCollector("a", {"cpu10": 3.0, "irq.36.cpu0": 2.0, "irq.RES.cpu0": 1.0})],
                               "h", "c", 0.1)
    (first_values, _), (second_values, _) = first.sample(), second.sample()
    assert first.catalog == second.catalog and first.catalog.version == second.catalog.version
    assert first.catalog.names == ("cpu2", "cpu10", "irq.36.cpu0", "irq.RES.cpu0")
    assert first_values.tolist() == second_values.tolist() == [4.0, 3.0, 2.0, 1.0]


def test_a_changed_channel_list_makes_a_new_catalog_version():
    source = FixedCollector("a", {"x": 1.0})
    registry = CollectorRegistry([source, FixedCollector("b", {"z": 3.0})], "h", "c", 0.1)
    registry.sample()
    first_version = registry.catalog.version
    source.readings = {"x": 2.0, "eth1": 5.0}
    values, changed = registry.sample()
    assert changed and registry.catalog.version != first_version
    assert registry.catalog.names == ("eth1", "x", "z") and values.tolist() == [5.0, 2.0, 3.0]
    source.readings = {"eth1": 6.0}
    values, changed = registry.sample()
    assert changed and registry.catalog.names == ("eth1", "z") and values.tolist() == [6.0, 3.0]


def test_two_collectors_reporting_one_channel_are_rejected_naming_both():
    registry = CollectorRegistry([FixedCollector("a", {"x": 1.0}), FixedCollector("b", {"x": 2.0})], "h", "c", 0.1)
    with pytest.raises(DuplicateChannelError, match="both a and b"):
        registry.sample()


def test_unavailable_collector_is_left_out_once(tmp_path):
    from producers.collectors.diskstats import DiskStatsCollector

    registry = CollectorRegistry([DiskStatsCollector(tmp_path), FixedCollector("a", {"x": 1.0})], "h", "c", 0.1)
    assert [c.source for c in registry.collectors] == ["a"]


def test_slow_source_holds_its_last_values_between_reads():
    fast, slow = FixedCollector("fast", {"f": 1.0}), FixedCollector("slow", {"s": 10.0})
    registry = CollectorRegistry([fast, slow], "h", "c", 0.1, source_intervals={"slow": 0.5})
    seen = []
    for tick in range(10):
        fast.readings, slow.readings = {"f": float(tick)}, {"s": 100.0 + tick}
        seen.append(registry.sample(tick)[0].tolist())
    assert [row[0] for row in seen] == list(range(10))
    assert [row[1] for row in seen] == [100.0] * 5 + [105.0] * 5


def test_source_over_its_time_budget_is_read_less_often():
    clock = iter(x * 0.05 for x in range(1000))  # every read appears to take 50 ms against a 25 ms budget
    registry = CollectorRegistry([FixedCollector("slow", {"s": 1.0})], "h", "c", 0.1, clock=lambda: next(clock))
    registry.sample(0)
    assert registry.sources[0].every_ticks == 1, "one slow read is a hiccup"
    registry.sample(1)
    registry.sample(2)
    assert registry.sources[0].every_ticks == 2 and registry.sources[0].slowdowns == 1


def test_a_source_that_fails_reads_nan_and_the_rest_of_the_frame_survives():
    class Failing(FixedCollector):
        def collect(self):
            if self.readings is None:
                raise OSError("device went away")
            return super().collect()

    flaky = Failing("flaky", {"g": 2.0})
    registry = CollectorRegistry([FixedCollector("a", {"x": 1.0}), flaky], "h", "c", 0.1)
    registry.sample()
    flaky.readings = None
    values, _ = registry.sample()
    assert registry.catalog.names == ("g", "x") and values[1] == 1.0 and math.isnan(values[0])
