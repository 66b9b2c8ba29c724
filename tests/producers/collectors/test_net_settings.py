"""NetSettingsCollector over network settings captured from a Linux 6.18 VM, over damaged copies of them, and over a
real network namespace of this machine entered through /proc/PID."""

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from producers.collectors.net_settings import NetSettingsCollector
from producers.source_table import default_collectors
from tests.conftest import FIXTURES
from tests.producers.collectors.namespace_hosts import run, veth_namespace

CAPTURED = FIXTURES / "net-settings"
SYSCTLS = "proc/sys/net/ipv4"
CAPTURED_VALUES = {
    "net.mtu.ifb0": 1500.0, "net.tx_queue_len.ifb0": 32.0, "net.mtu.ifb1": 1500.0, "net.tx_queue_len.ifb1": 32.0,
    "net.mtu.eth0": 1400.0, "net.tx_queue_len.eth0": 1000.0,
    "net.tcp_rmem_default": 131072.0, "net.tcp_rmem_max": 33554432.0,
    "net.tcp_wmem_default": 16384.0, "net.tcp_wmem_max": 4194304.0,
    "net.core_rmem_max": 4194304.0, "net.core_wmem_max": 4194304.0,
    "net.tcp_congestion.bbr": 1.0, "net.tcp_congestion.cubic": 0.0, "net.tcp_congestion.reno": 0.0,
}
NAMESPACE_RMEM = (4096, 65536, 1048576)


def captured_collector(root: Path = CAPTURED) -> NetSettingsCollector:
    return NetSettingsCollector(root / "proc", root / "sys")


@pytest.fixture
def captured_copy(tmp_path) -> Path:
    shutil.copytree(CAPTURED, tmp_path, dirs_exist_ok=True)
    return tmp_path


def test_captured_settings_become_static_channels_loopback_left_out():
    collector = captured_collector()
    values = collector.collect()
    assert values == CAPTURED_VALUES and list(values) == list(CAPTURED_VALUES)
    mtu, congestion = collector.describe("net.mtu.eth0"), collector.describe("net.tcp_congestion.bbr")
    assert (mtu.subsystem, mtu.kind, mtu.unit, mtu.device) == ("network", "static", "bytes", "eth0")
    assert collector.describe("net.tx_queue_len.eth0").unit == "packets"
    assert collector.describe("net.core_wmem_max").unit == "bytes"
    assert (congestion.kind, congestion.unit) == ("static", "flag")


def test_a_missing_congestion_control_file_costs_only_its_channels(captured_copy):
    (captured_copy / SYSCTLS / "tcp_congestion_control").unlink()
    values = captured_collector(captured_copy).collect()
    assert values == {name: value for name, value in CAPTURED_VALUES.items() if ".tcp_congestion." not in name}


def test_without_the_offered_list_the_algorithm_in_use_still_shows(captured_copy):
    (captured_copy / SYSCTLS / "tcp_available_congestion_control").unlink()
    values = captured_collector(captured_copy).collect()
    assert [name for name in values if ".tcp_congestion." in name] == ["net.tcp_congestion.bbr"]


def test_a_malformed_buffer_sysctl_or_vanished_interface_costs_only_its_channels(captured_copy):
    (captured_copy / SYSCTLS / "tcp_rmem").write_text("4096\n")
    shutil.rmtree(captured_copy / "sys/class/net/ifb1")
    values = captured_collector(captured_copy).collect()
    lost = {"net.tcp_rmem_default", "net.tcp_rmem_max", "net.mtu.ifb1", "net.tx_queue_len.ifb1"}
    assert values == {name: value for name, value in CAPTURED_VALUES.items() if name not in lost}


def test_a_root_with_nothing_readable_is_unavailable(tmp_path):
    collector = NetSettingsCollector(tmp_path, tmp_path)
    with pytest.raises(OSError, match="no network setting is readable"):
        collector.collect()
    assert not collector.available()


def test_the_source_is_read_every_five_seconds_in_the_network_group():
    collectors = default_collectors(groups=("network",), net_procfs="/proc/4242")
    settings_collector = next(c for c in collectors if isinstance(c, NetSettingsCollector))
    assert type(collectors[collectors.index(settings_collector) - 1]).__name__ == "SockStatCollector"
    assert str(settings_collector.procfs) == "/proc/4242" and settings_collector.default_interval_s == 5.0


@pytest.fixture(scope="module")
def captured_scratch(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("net-settings")
    shutil.copytree(CAPTURED, root, dirs_exist_ok=True)
    return root


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=48), st.sampled_from([f"{SYSCTLS}/tcp_wmem", f"{SYSCTLS}/tcp_congestion_control",
                                                "proc/sys/net/core/rmem_max", "sys/class/net/eth0/mtu"]))
def test_garbage_in_one_file_never_crashes_a_read_nor_costs_other_files(captured_scratch, garbage, relative):
    path = captured_scratch / relative
    path.write_bytes(garbage)
    try:
        values = captured_collector(captured_scratch).collect()
    finally:
        path.write_bytes((CAPTURED / relative).read_bytes())
    assert all(isinstance(value, float) for value in values.values())
    assert values["net.mtu.ifb0"] == 1500.0 and values["net.tcp_rmem_max"] == 33554432.0


@pytest.fixture
def namespace_host():
    """A namespace holding one end of a veth pair (MTU 1400, queue 77), reno and its own tcp_rmem."""
    with veth_namespace("rvl") as host:
        run("ip", "-n", host.namespace, "link", "set", host.inside, "mtu", "1400", "txqueuelen", "77")
        run("ip", "netns", "exec", host.namespace, "sysctl", "-qw", "net.ipv4.tcp_congestion_control=reno",
            "net.ipv4.tcp_rmem=" + " ".join(map(str, NAMESPACE_RMEM)))
        yield host


def test_another_namespace_is_read_through_its_process_and_the_own_one_is_untouched(namespace_host):
    collector = NetSettingsCollector(namespace_host.procfs)
    try:
        inside = collector.collect()
        assert collector.collect() == inside
    finally:
        collector.close()
    own = NetSettingsCollector().collect()
    assert (inside[f"net.mtu.{namespace_host.inside}"], inside[f"net.tx_queue_len.{namespace_host.inside}"]) == (
        1400.0, 77.0)
    assert (inside["net.tcp_rmem_default"], inside["net.tcp_rmem_max"]) == NAMESPACE_RMEM[1:]
    assert inside["net.tcp_congestion.reno"] == 1.0 and sum(v for n, v in inside.items() if ".tcp_congestion." in n) == 1
    assert not any(namespace_host.outside in name for name in inside)
    assert own[f"net.mtu.{namespace_host.outside}"] == 1500.0 and f"net.mtu.{namespace_host.inside}" not in own
    own_current = Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()
    own_rmem = tuple(map(float, Path("/proc/sys/net/ipv4/tcp_rmem").read_text().split()))
    assert own[f"net.tcp_congestion.{own_current}"] == 1.0 and own["net.tcp_rmem_default"] == own_rmem[1]
