"""CpuFreqCollector over a hand-built 96-CPU sysfs tree, an empty root and garbage attribute files."""

import math
import shutil

import pytest
from hypothesis import given, settings, strategies as st

from producers.collectors.cpufreq import CpuFreqCollector
from tests.conftest import FIXTURES

LARGE = FIXTURES / "sysfs-large"
CPU0 = "devices/system/cpu/cpu0/cpufreq"


@pytest.fixture
def large_copy(tmp_path):
    return shutil.copytree(LARGE, tmp_path / "sys", dirs_exist_ok=True)


def test_large_host_has_a_current_and_a_maximum_clock_per_cpu():
    collector = CpuFreqCollector(sysfs=LARGE)
    values = collector.collect()
    assert len(values) == 96 * 2
    assert {collector.describe(name).device for name in values} == {f"cpu{n}" for n in range(96)}
    assert list(values)[:2] == ["cpu.freq_mhz.cpu0", "cpu.freq_max_mhz.cpu0"]


def test_khz_become_mhz_with_kinds_and_units():
    collector = CpuFreqCollector(sysfs=LARGE)
    values = collector.collect()
    current_khz = float((LARGE / CPU0 / "scaling_cur_freq").read_text())
    assert values["cpu.freq_mhz.cpu0"] == pytest.approx(current_khz / 1000)
    assert values["cpu.freq_max_mhz.cpu95"] == pytest.approx(4000.0)
    assert collector.describe("cpu.freq_mhz.cpu0").kind == "gauge"
    assert collector.describe("cpu.freq_max_mhz.cpu0").kind == "static"
    assert collector.describe("cpu.freq_mhz.cpu7").unit == "MHz"
    assert collector.describe("cpu.freq_mhz.cpu7").subsystem == "cpu"


def test_names_tuple_is_the_same_object_between_reads():
    collector = CpuFreqCollector(sysfs=LARGE)
    assert collector.read().names is collector.read().names


def test_a_missing_or_unreadable_attribute_costs_one_channel(large_copy):
    (large_copy / CPU0 / "scaling_cur_freq").unlink()
    (large_copy / "devices/system/cpu/cpu1/cpufreq/cpuinfo_max_freq").unlink()
    (large_copy / "devices/system/cpu/cpu1/cpufreq/cpuinfo_max_freq").mkdir()  # read() fails with EISDIR
    (large_copy / "devices/system/cpu/cpu2/cpufreq/scaling_cur_freq").write_text("<unknown>\n")
    values = CpuFreqCollector(sysfs=large_copy).collect()
    assert len(values) == 192
    nan = [name for name, value in values.items() if math.isnan(value)]
    assert nan == ["cpu.freq_mhz.cpu0", "cpu.freq_max_mhz.cpu1", "cpu.freq_mhz.cpu2"]


def test_host_without_cpufreq_is_unavailable(tmp_path):
    assert not CpuFreqCollector(sysfs=tmp_path).available()
    (tmp_path / "devices/system/cpu/cpu0").mkdir(parents=True)
    assert not CpuFreqCollector(sysfs=tmp_path).available()
    assert CpuFreqCollector(sysfs=LARGE).available()


@pytest.fixture(scope="module")
def one_cpu_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("sys")
    shutil.copytree(LARGE / "devices/system/cpu/cpu0", root / "devices/system/cpu/cpu0")
    return root


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=48))
def test_garbage_in_one_attribute_never_crashes_a_read(one_cpu_root, garbage):
    attribute = one_cpu_root / CPU0 / "scaling_cur_freq"
    attribute.write_bytes(b"2400000\n")
    collector = CpuFreqCollector(sysfs=one_cpu_root)
    before = collector.read()
    attribute.write_bytes(garbage)
    after = collector.read()
    assert after.names is before.names
    assert all(isinstance(v, float) for v in after.values)
    assert after.values[1] == before.values[1] == 4000.0
