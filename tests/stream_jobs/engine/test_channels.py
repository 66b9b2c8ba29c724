"""A channel's subsystem follows the prefix of its Reveal name."""

import pytest

from stream_jobs.engine.channels import subsystem_for


@pytest.mark.parametrize("name,subsystem", [
    ("cpu.busy.cpu3", "cpu"), ("pmu.instructions", "cpu"), ("irq.total", "cpu"), ("softirq.NET_RX", "cpu"),
    ("gpu.util.gpu0", "gpu"), ("mem.Dirty", "memory"), ("vm.pgfault", "memory"), ("numa.hit.node0", "memory"),
    ("net.rx_bytes.eth0", "network"), ("snmp.RetransSegs", "network"), ("sock.tcp_inuse", "network"),
    ("ib.port_rcv_data.mlx5_0", "network"), ("disk.reads.sda", "storage"), ("gpu_util", "other"),
    ("cpubusy", "other"),
])
def test_subsystems_follow_reveal_name_prefixes(name, subsystem):
    assert subsystem_for(name) == subsystem
