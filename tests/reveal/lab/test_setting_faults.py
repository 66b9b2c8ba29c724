"""Configuration differences: the values each kind accepts, the channels that show each setting, and, on the real
kernel (root, namespaces), each setting changed on its host alone, read back while in force and restored when
lifted."""

import os
import shutil

import pytest

from reveal.lab.fault_kinds import make_fault
from reveal.lab.faults import FaultSpec
from reveal.lab.hosts import LabNetwork, run_command
from reveal.lab.setting_faults import (SETTING_FAULTS, CongestionControl, Mtu, TcpBuffers, TxQueueLen,
                                       available_congestion_controls)

MISSING = [tool for tool in ("ip", "sysctl") if shutil.which(tool) is None]


@pytest.fixture
def lab_machine():
    """Root and the lab's tools, or a failure naming what is missing (never a skip)."""
    if os.geteuid() != 0 or MISSING:
        pytest.fail(f"the lab needs root and {', '.join(MISSING) or 'iproute2 and procps'}")


def test_each_setting_names_the_channels_that_show_it():
    assert {kind: fault.channel_prefixes for kind, fault in SETTING_FAULTS.items()} == {
        "mtu": ("net.mtu.",), "tx_queue_len": ("net.tx_queue_len.",), "tcp_buffers": ("net.tcp_rmem", "net.tcp_wmem"),
        "congestion_control": ("net.tcp_congestion.",)}
    assert {fault.subsystem for fault in SETTING_FAULTS.values()} == {"network"}


@pytest.mark.parametrize("fault, magnitude, refusal", [
    (Mtu, 1400, ""), (Mtu, 1400.5, "magnitude must be a whole number of bytes from 68 to 65535, got 1400.5"),
    (Mtu, 40, "magnitude must be a whole number of bytes from 68 to 65535, got 40"), (TxQueueLen, 100, ""),
    (TxQueueLen, 0, "magnitude must be a whole number of packets from 1 to 1000000, got 0"), (TcpBuffers, 1048576, ""),
    (TcpBuffers, 1024, "magnitude must be a whole number of bytes from 4096 to 2147483647, got 1024"),
])
def test_a_setting_must_be_a_whole_number_in_its_range(fault, magnitude, refusal):
    assert fault.refusal(magnitude, "") == refusal


def test_a_congestion_control_must_be_one_the_kernel_offers(tmp_path):
    offered = tmp_path / "tcp_available_congestion_control"
    offered.write_text("reno bbr cubic\n")
    assert available_congestion_controls(offered) == ("reno", "bbr", "cubic")
    assert available_congestion_controls(tmp_path / "missing") == ()
    assert "reno" in available_congestion_controls()
    assert CongestionControl.refusal(0, "reno") == ""
    assert CongestionControl.refusal(0, "warp9").startswith("setting 'warp9' is not one of this machine's")
    assert CongestionControl.refusal(0, "").startswith("setting is required")


def _read(host, path: str) -> str:
    """A file of /proc/sys or /sys as the host's namespace shows it, fields separated by one space."""
    return " ".join(run_command("ip", "netns", "exec", host.namespace, "cat", path).stdout.split())


RMEM, WMEM = "/proc/sys/net/ipv4/tcp_rmem", "/proc/sys/net/ipv4/tcp_wmem"


@pytest.mark.quiet_host
@pytest.mark.parametrize("tag, kind, magnitude, setting, path", [
    ("ts1", "mtu", 1400, "", "/sys/class/net/eth0/mtu"),
    ("ts2", "tx_queue_len", 100, "", "/sys/class/net/eth0/tx_queue_len"),
    ("ts3", "tcp_buffers", 1048576, "", RMEM), ("ts4", "tcp_buffers", 1048576, "", WMEM),
    ("ts5", "congestion_control", 0, "reno", "/proc/sys/net/ipv4/tcp_congestion_control"),
])
def test_a_setting_is_in_force_on_its_host_alone_and_restored_when_lifted(lab_machine, tmp_path, tag, kind,
                                                                         magnitude, setting, path):
    with LabNetwork(tag, ["h1", "h2", "h3"]) as network:
        h1, h2 = network.hosts["h1"], network.hosts["h2"]
        before = _read(h1, path)
        fault = make_fault(FaultSpec(kind, "h1", 0, 150, magnitude, True, setting), network.hosts, tmp_path)
        fault.start()
        during, peer = _read(h1, path), _read(h2, path)
        effect = fault.stop()
        after = _read(h1, path)
    assert during.split()[-1] == (setting or str(magnitude)) and peer == before != during
    if kind == "tcp_buffers":
        assert during.split()[:2] == before.split()[:2]
    assert effect.took_effect, effect.measured
    assert effect.measured["value"] == fault.asked
    assert effect.measured["previous"] == effect.measured["peers_value"] != fault.asked
    assert after == before


@pytest.mark.quiet_host
def test_a_setting_the_peers_already_have_does_not_take_effect(lab_machine, tmp_path):
    with LabNetwork("ts6", ["h1", "h2"]) as network:
        fault = make_fault(FaultSpec("mtu", "h1", 0, 150, 1500, True), network.hosts, tmp_path)
        fault.start()
        effect = fault.stop()
    assert not effect.took_effect
    assert effect.measured == {"value": 1500, "peers_value": 1500, "previous": 1500}
