"""What every collector shares: the text collectors' contract over /proc text captured from a Linux 6.x VM (finite
values with catalog entries, stable names, a malformed line costing only its own channels, garbage never crashing a
read), repeated names, and one-value sysfs files."""

import logging
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from producers.collectors.base import Field, ProcTextCollector, SysfsFilesCollector
from producers.collectors.diskstats import DiskStatsCollector
from producers.collectors.interrupts import InterruptsCollector, SoftIrqsCollector
from producers.collectors.meminfo import MemInfoCollector
from producers.collectors.netdev import NetDevCollector
from producers.collectors.pressure import PressureCollector
from producers.collectors.procstat import ProcStatCollector
from producers.collectors.snmp import NetstatCollector, SnmpCollector
from producers.collectors.sockstat import SockStatCollector
from producers.collectors.softnet import SoftnetCollector
from producers.collectors.vmstat import VmStatCollector
from schemas.records import Channel
from tests.conftest import FIXTURES

ALL = (ProcStatCollector, MemInfoCollector, NetDevCollector, SnmpCollector, DiskStatsCollector)
SOURCES = (VmStatCollector, NetstatCollector, SockStatCollector, SoftnetCollector, PressureCollector,
           InterruptsCollector, SoftIrqsCollector)


@pytest.mark.parametrize("collector_class", ALL)
def test_contract_every_value_is_a_finite_float_with_a_catalog_entry(collector_class, procfs):
    collector = collector_class(procfs)
    values = collector.collect()
    assert values, f"{collector_class.__name__} read nothing from the captured fixture"
    for name, value in values.items():
        assert isinstance(value, float) and math.isfinite(value)
        channel = collector.describe(name)
        assert channel.name == name
        assert channel.subsystem in ("cpu", "memory", "network", "storage")


@pytest.mark.parametrize("collector_class", ALL)
def test_contract_repeated_collection_is_identical_for_unchanged_input(collector_class, procfs):
    collector = collector_class(procfs)
    assert collector.collect() == collector.collect()


@pytest.mark.parametrize("collector_class", SOURCES)
def test_contract_finite_values_described_channels_and_stable_names(collector_class, procfs):
    collector = collector_class(procfs)
    first, second = collector.read(), collector.read()
    assert len(first.names) > 0 and first.names is second.names
    assert np.isfinite(first.values).all()
    for name in first.names:
        assert collector.describe(name).name == name


def test_missing_source_makes_the_collector_unavailable(tmp_path):
    assert not DiskStatsCollector(tmp_path).available()
    assert DiskStatsCollector(FIXTURES / "proc").available()


def test_a_malformed_value_costs_only_its_line(tmp_path):
    text = (FIXTURES / "proc" / "vmstat").read_text().replace("pgfault ", "pgfault x", 1)
    (tmp_path / "vmstat").write_text(text)
    values = VmStatCollector(tmp_path).collect()
    assert "vm.pgfault" not in values and "vm.pgmajfault" in values


def test_a_value_that_turns_malformed_after_the_layout_was_cached(tmp_path):
    (tmp_path / "vmstat").write_text((FIXTURES / "proc" / "vmstat").read_text())
    collector = VmStatCollector(tmp_path)
    assert "vm.pgfault" in collector.collect()
    (tmp_path / "vmstat").write_text((FIXTURES / "proc" / "vmstat").read_text().replace("pgfault ", "pgfault ?", 1))
    values = collector.collect()
    assert "vm.pgfault" not in values and len(values) > 100


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(alphabet="abcpu0123456789 :.-\t", max_size=60), max_size=12))
def test_garbage_lines_never_crash_a_collector(tmp_path_factory, lines):
    root = tmp_path_factory.mktemp("garbage")
    (root / "net").mkdir()
    for relative in ("stat", "meminfo", "diskstats", "net/dev", "net/snmp"):
        (root / relative).write_text("\n".join(lines))
    for collector_class in ALL:
        values = collector_class(root).collect()
        assert all(isinstance(v, float) for v in values.values())


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet="CPU0123456789abcdef :.-=\tavgtotalsomefull", max_size=80), max_size=10))
def test_garbage_never_crashes_these_sources(tmp_path_factory, lines):
    root = tmp_path_factory.mktemp("garbage")
    (root / "net").mkdir()
    (root / "pressure").mkdir()
    for relative in ("vmstat", "net/netstat", "net/sockstat", "net/softnet_stat", "interrupts", "softirqs",
                     "pressure/cpu", "pressure/memory", "pressure/io"):
        (root / relative).write_text("\n".join(lines))
    for collector_class in SOURCES:
        reading = collector_class(root).read()
        assert len(reading.names) == len(reading.values)
        assert all(isinstance(v, float) and not math.isinf(v) for v in list(reading.values))


class Pairs(ProcTextCollector):
    """A text file of "name value" lines, one channel per line."""

    source = "pairs"
    relative = "pairs"

    def line_fields(self, number, tokens):
        yield Field(number, 1, "pair", tokens[0].decode(), "cpu", "gauge")


class Attributes(SysfsFilesCollector):
    """One-value files given by path, each scaled by two."""

    source = "attributes"

    def __init__(self, paths):
        super().__init__()
        self.paths = paths

    def discover(self):
        return [(Channel(f"attr.{path.name}", "cpu", "gauge", "", path.name), path, 2.0) for path in self.paths]


def test_a_name_repeated_in_a_text_file_keeps_its_first_value_and_is_reported_once(tmp_path, caplog):
    (tmp_path / "pairs").write_text("a 1\nb 2\na 3\n")
    collector = Pairs(tmp_path)
    with caplog.at_level(logging.WARNING):
        assert collector.collect() == {"pair.a": 1.0, "pair.b": 2.0}
        assert collector.collect() == {"pair.a": 1.0, "pair.b": 2.0}
    assert sum("appears more than once" in record.getMessage() for record in caplog.records) == 1
    assert collector.files() == (tmp_path / "pairs",)


def test_one_value_files_are_scaled_and_an_unreadable_or_infinite_one_reads_nan(tmp_path):
    (tmp_path / "a").write_text("21\n")
    (tmp_path / "b").write_text("inf\n")
    collector = Attributes([tmp_path / "a", tmp_path / "b", tmp_path / "gone"])
    values = collector.collect()
    assert values["attr.a"] == 42.0 and math.isnan(values["attr.b"]) and math.isnan(values["attr.gone"])
    assert collector.describe("attr.a").device == "a"
    assert collector.read().names is collector.read().names
    with pytest.raises(FileNotFoundError, match="nothing to read"):
        Attributes([]).read()
