"""CpuIdleCollector over a hand-built 96-CPU sysfs tree, this host's /sys, an empty root and garbage files."""

import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from producers.collectors.cpuidle import CpuIdleCollector
from tests.conftest import FIXTURES

LARGE = FIXTURES / "sysfs-large"
CPU0_IDLE = "devices/system/cpu/cpu0/cpuidle"
STATES = ("poll", "c1", "c1e", "c6")


def test_large_host_has_time_and_entries_per_state_per_cpu():
    collector = CpuIdleCollector(sysfs=LARGE)
    values = collector.collect()
    assert len(values) == 96 * len(STATES) * 2
    assert {name.split(".")[2] for name in values} == set(STATES)
    assert list(values)[:4] == ["cpu.cstate_time_us.poll.cpu0", "cpu.cstate_entries.poll.cpu0",
                                "cpu.cstate_time_us.c1.cpu0", "cpu.cstate_entries.c1.cpu0"]


def test_values_kinds_and_units():
    collector = CpuIdleCollector(sysfs=LARGE)
    values = collector.collect()
    state = LARGE / CPU0_IDLE / "state3"
    assert values["cpu.cstate_time_us.c6.cpu0"] == float((state / "time").read_text())
    assert values["cpu.cstate_entries.c6.cpu0"] == float((state / "usage").read_text())
    time_channel = collector.describe("cpu.cstate_time_us.c1e.cpu95")
    assert (time_channel.kind, time_channel.unit, time_channel.device) == ("counter", "us", "cpu95")
    assert collector.describe("cpu.cstate_entries.c1e.cpu95").unit == "entries"


def test_state_names_are_sanitised_and_a_nameless_state_uses_its_directory(tmp_path):
    shutil.copytree(LARGE / CPU0_IDLE, tmp_path / CPU0_IDLE)
    (tmp_path / CPU0_IDLE / "state1/name").write_text("haltpoll idle\n")
    (tmp_path / CPU0_IDLE / "state2/name").unlink()
    (tmp_path / CPU0_IDLE / "state3/name").write_text("C1\n")  # a repeated name keeps both states apart
    names = list(CpuIdleCollector(sysfs=tmp_path).collect())
    states = [name.split(".")[2] for name in names[::2]]
    assert states == ["poll", "haltpoll_idle", "state2", "c1"]
    (tmp_path / CPU0_IDLE / "state3/name").write_text("haltpoll idle\n")
    states = [name.split(".")[2] for name in list(CpuIdleCollector(sysfs=tmp_path).collect())[::2]]
    assert states == ["poll", "haltpoll_idle_state1", "state2", "haltpoll_idle_state3"]


def test_a_missing_or_unreadable_attribute_costs_one_channel(tmp_path):
    shutil.copytree(LARGE / "devices/system/cpu/cpu0", tmp_path / "devices/system/cpu/cpu0")
    (tmp_path / CPU0_IDLE / "state1/time").unlink()
    (tmp_path / CPU0_IDLE / "state2/usage").unlink()
    (tmp_path / CPU0_IDLE / "state2/usage").mkdir()
    values = CpuIdleCollector(sysfs=tmp_path).collect()
    assert len(values) == 8
    assert [name for name, value in values.items() if math.isnan(value)] == [
        "cpu.cstate_time_us.c1.cpu0", "cpu.cstate_entries.c1e.cpu0"]


def test_empty_root_is_unavailable(tmp_path):
    assert not CpuIdleCollector(sysfs=tmp_path).available()


def test_this_host_reads_every_cpu_and_state_or_says_it_has_none():
    collector = CpuIdleCollector()
    if not Path("/sys/devices/system/cpu/cpu0/cpuidle/state0").is_dir():
        assert not collector.available()
        return
    reading = collector.read()
    cpus = list(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpuidle/state[0-9]*"))
    assert len(reading.names) == 2 * len(cpus)
    assert not np.isnan(reading.values).any()
    assert collector.read().names is reading.names


@pytest.fixture(scope="module")
def one_cpu_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("sys")
    shutil.copytree(LARGE / CPU0_IDLE, root / CPU0_IDLE)
    return root


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=48), st.sampled_from(["name", "time", "usage"]))
def test_garbage_in_one_attribute_never_crashes_a_read(one_cpu_root, garbage, attribute):
    path = one_cpu_root / CPU0_IDLE / "state2" / attribute
    original = (LARGE / CPU0_IDLE / "state2" / attribute).read_bytes()
    path.write_bytes(garbage)
    try:
        reading = CpuIdleCollector(sysfs=one_cpu_root).read()
    finally:
        path.write_bytes(original)
    assert len(reading.names) == 8 and len(set(reading.names)) == 8
    assert all(isinstance(v, float) for v in reading.values)
    assert reading.values[0] == float((LARGE / CPU0_IDLE / "state0/time").read_text())
