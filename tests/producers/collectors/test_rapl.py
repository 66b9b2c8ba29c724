"""RaplCollector over a two-socket server and a laptop powercap tree, an empty root and garbage files."""

import math
import shutil

import pytest
from hypothesis import given, settings, strategies as st

from producers.collectors.rapl import RaplCollector
from tests.conftest import FIXTURES

LARGE = FIXTURES / "sysfs-large"
LAPTOP = FIXTURES / "sysfs-laptop"
POWERCAP = "class/powercap"


def test_two_sockets_give_unique_package_and_dram_domains():
    collector = RaplCollector(sysfs=LARGE)
    values = collector.collect()
    assert list(values) == ["cpu.energy_uj.package-0", "cpu.energy_range_uj.package-0",
                            "cpu.energy_uj.dram-0", "cpu.energy_range_uj.dram-0",
                            "cpu.energy_uj.package-1", "cpu.energy_range_uj.package-1",
                            "cpu.energy_uj.dram-1", "cpu.energy_range_uj.dram-1"]
    assert values["cpu.energy_uj.dram-1"] == float((LARGE / POWERCAP / "intel-rapl:1:0/energy_uj").read_text())
    assert values["cpu.energy_range_uj.package-0"] == 262143328850.0


def test_kinds_units_devices_and_subsystems():
    collector = RaplCollector(sysfs=LARGE)
    collector.collect()
    package = collector.describe("cpu.energy_uj.package-1")
    assert (package.subsystem, package.kind, package.unit, package.device) == ("cpu", "counter", "uJ", "package-1")
    assert collector.describe("cpu.energy_range_uj.package-1").kind == "static"
    assert collector.describe("cpu.energy_uj.dram-0").subsystem == "memory"


def test_laptop_subzones_are_numbered_by_package_and_mmio_is_left_out():
    values = RaplCollector(sysfs=LAPTOP).collect()
    assert [name for name in values if name.startswith("cpu.energy_uj.")] == [
        "cpu.energy_uj.package-0", "cpu.energy_uj.core-0", "cpu.energy_uj.uncore-0", "cpu.energy_uj.psys"]


def test_a_missing_or_unreadable_attribute_costs_one_channel(tmp_path):
    shutil.copytree(LARGE / POWERCAP, tmp_path / POWERCAP)
    (tmp_path / POWERCAP / "intel-rapl:0:0/max_energy_range_uj").unlink()
    (tmp_path / POWERCAP / "intel-rapl:1/energy_uj").unlink()
    (tmp_path / POWERCAP / "intel-rapl:1/energy_uj").mkdir()
    values = RaplCollector(sysfs=tmp_path).collect()
    assert len(values) == 8
    assert [name for name, value in values.items() if math.isnan(value)] == [
        "cpu.energy_range_uj.dram-0", "cpu.energy_uj.package-1"]


def test_energy_readable_by_root_only_makes_the_collector_unavailable(monkeypatch):
    monkeypatch.setattr("producers.collectors.rapl.os.access", lambda path, mode: False)
    collector = RaplCollector(sysfs=LARGE)
    with pytest.raises(PermissionError, match="root"):
        collector.read()
    assert not collector.available()


def test_host_without_powercap_is_unavailable(tmp_path):
    assert not RaplCollector(sysfs=tmp_path).available()
    (tmp_path / POWERCAP / "intel-rapl").mkdir(parents=True)
    assert not RaplCollector(sysfs=tmp_path).available()


def test_names_tuple_is_the_same_object_between_reads():
    collector = RaplCollector(sysfs=LAPTOP)
    assert collector.read().names is collector.read().names


@pytest.fixture(scope="module")
def laptop_copy(tmp_path_factory):
    root = tmp_path_factory.mktemp("sys")
    shutil.copytree(LAPTOP / POWERCAP, root / POWERCAP)
    return root


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=48), st.sampled_from(["name", "energy_uj", "max_energy_range_uj"]))
def test_garbage_in_one_attribute_never_crashes_a_read(laptop_copy, garbage, attribute):
    path = laptop_copy / POWERCAP / "intel-rapl:0:0" / attribute
    original = (LAPTOP / POWERCAP / "intel-rapl:0:0" / attribute).read_bytes()
    path.write_bytes(garbage)
    try:
        reading = RaplCollector(sysfs=laptop_copy).read()
    finally:
        path.write_bytes(original)
    assert len(reading.names) == 8 and len(set(reading.names)) == 8
    assert all(isinstance(v, float) for v in reading.values)
    assert reading.names[0] == "cpu.energy_uj.package-0"
    assert reading.values[0] == float((LAPTOP / POWERCAP / "intel-rapl:0/energy_uj").read_text())
