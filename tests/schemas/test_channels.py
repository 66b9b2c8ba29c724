"""The channel vocabulary: every family maps to a known subsystem, and names outside Reveal's scheme read 'other'."""

import doctest

import pytest

from schemas import channels
from schemas.channels import CHANNEL_FAMILIES, SUBSYSTEMS, UNKNOWN_SUBSYSTEM, subsystem_for


def test_doctests_pass():
    assert doctest.testmod(channels).failed == 0


def test_every_family_names_a_known_subsystem():
    assert {subsystem for _, subsystem in CHANNEL_FAMILIES} <= set(SUBSYSTEMS)


@pytest.mark.parametrize("name, subsystem", [
    (channels.TCP_RETRANSMITS, "network"), (channels.TCP_SPURIOUS_RETRANSMITS, "network"),
    (channels.CPU_BUSY_PCT_ALL, "cpu"), (channels.GPU_UTILIZATION_PREFIX + "gpu0", "gpu"),
    ("cgroup.io_rbytes.pod", "storage"), ("agent.rss_bytes", "agent"), ("made.up", UNKNOWN_SUBSYSTEM),
])
def test_named_channels_fall_in_their_family(name, subsystem):
    assert subsystem_for(name) == subsystem


@pytest.mark.parametrize("name,subsystem", [
    ("cpu.busy.cpu3", "cpu"), ("pmu.instructions", "cpu"), ("irq.total", "cpu"), ("softirq.NET_RX", "cpu"),
    ("gpu.util.gpu0", "gpu"), ("mem.Dirty", "memory"), ("vm.pgfault", "memory"), ("numa.hit.node0", "memory"),
    ("net.rx_bytes.eth0", "network"), ("snmp.RetransSegs", "network"), ("sock.tcp_inuse", "network"),
    ("ib.port_rcv_data.mlx5_0", "network"), ("disk.reads.sda", "storage"), ("gpu_util", "other"),
    ("cpubusy", "other"),
])
def test_subsystems_follow_reveal_name_prefixes(name, subsystem):
    assert subsystem_for(name) == subsystem
