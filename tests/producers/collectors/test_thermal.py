"""ThermalCollector over a two-socket server and a laptop (hwmon and thermal zones), old layouts and garbage."""

import math
import shutil

import pytest
from hypothesis import given, settings, strategies as st

from producers.collectors.thermal import ThermalCollector
from tests.conftest import FIXTURES

LARGE = FIXTURES / "sysfs-large"
LAPTOP = FIXTURES / "sysfs-laptop"


def test_server_sensors_per_socket_core_nvme_and_zone():
    collector = ThermalCollector(sysfs=LARGE)
    values = collector.collect()
    assert len(values) == 2 * 25 + 2 + 2
    assert "cpu.temp_c.coretemp_package_id_0" in values and "cpu.temp_c.coretemp_package_id_1" in values
    # Core 0 exists on both sockets: each keeps its hwmon directory to stay apart.
    assert "cpu.temp_c.coretemp_core_0_hwmon0" in values and "cpu.temp_c.coretemp_core_0_hwmon1" in values
    assert "cpu.temp_c.nvme_composite" in values and "cpu.temp_c.nvme_sensor_1" in values
    assert "cpu.temp_c.x86_pkg_temp_thermal_zone1" in values
    assert not any("crit" in name or "max" in name for name in values)


def test_millidegrees_become_degrees_and_every_sensor_is_static():
    collector = ThermalCollector(sysfs=LAPTOP)
    values = collector.collect()
    assert values["cpu.temp_c.nvme_composite"] == pytest.approx(32.85)
    assert values["cpu.temp_c.int3400_thermal"] == pytest.approx(20.0)
    assert values["cpu.temp_c.acpitz_temp1"] == pytest.approx(47.0)  # no label: the input's own name
    channel = collector.describe("cpu.temp_c.coretemp_core_3")
    assert (channel.subsystem, channel.kind, channel.unit, channel.device) == (
        "cpu", "static", "celsius", "coretemp_core_3")
    assert {collector.describe(name).kind for name in values} == {"static"}
    assert len(values) == 12


def test_old_kernel_layout_keeps_attributes_under_device(tmp_path):
    device = tmp_path / "class/hwmon/hwmon0/device"
    device.mkdir(parents=True)
    (device / "name").write_text("k10temp\n")
    (device / "temp1_input").write_text("52125\n")
    (device / "temp1_label").write_text("Tctl\n")
    assert ThermalCollector(sysfs=tmp_path).collect() == {"cpu.temp_c.k10temp_tctl": pytest.approx(52.125)}


def test_a_missing_or_unreadable_sensor_costs_one_channel(tmp_path):
    shutil.copytree(LAPTOP / "class", tmp_path / "class")
    (tmp_path / "class/thermal/thermal_zone3/temp").unlink()  # iwlwifi with its interface removed
    (tmp_path / "class/hwmon/hwmon3/temp1_input").unlink()
    (tmp_path / "class/hwmon/hwmon3/temp1_input").mkdir()
    values = ThermalCollector(sysfs=tmp_path).collect()
    assert len(values) == 12
    assert [name for name, value in values.items() if math.isnan(value)] == [
        "cpu.temp_c.iwlwifi_1_temp1", "cpu.temp_c.iwlwifi_1"]


def test_host_without_sensors_is_unavailable(tmp_path):
    assert not ThermalCollector(sysfs=tmp_path).available()
    (tmp_path / "class/thermal/cooling_device0").mkdir(parents=True)
    assert not ThermalCollector(sysfs=tmp_path).available()


def test_names_tuple_is_the_same_object_between_reads():
    collector = ThermalCollector(sysfs=LARGE)
    assert collector.read().names is collector.read().names


@pytest.fixture(scope="module")
def laptop_copy(tmp_path_factory):
    root = tmp_path_factory.mktemp("sys")
    shutil.copytree(LAPTOP / "class", root / "class")
    return root


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=48), st.sampled_from(["hwmon/hwmon2/temp2_label", "hwmon/hwmon2/temp2_input",
                                                "hwmon/hwmon2/name", "thermal/thermal_zone0/type"]))
def test_garbage_in_one_attribute_never_crashes_a_read(laptop_copy, garbage, attribute):
    path = laptop_copy / "class" / attribute
    original = (LAPTOP / "class" / attribute).read_bytes()
    path.write_bytes(garbage)
    try:
        reading = ThermalCollector(sysfs=laptop_copy).read()
    finally:
        path.write_bytes(original)
    assert len(reading.names) == 12 and len(set(reading.names)) == 12
    assert all(isinstance(v, float) for v in reading.values)
    assert reading.values[0] == pytest.approx(47.0)
