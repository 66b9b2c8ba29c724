"""What of the lab's network faults works without root: a host's interface and TCP counters, read from its namespace
view (the fault kinds are made in test_fault_kinds.py, the cgroup faults' counters read in test_cgroup_faults.py)."""

import subprocess

from reveal.lab.faults import interface_counters, tcp_counters
from reveal.lab.hosts import LabCgroup, LabHost


def lab_host(root, holder=None, unified=True) -> LabHost:
    """A host whose cgroup lives in a folder made to look like the machine's cgroup tree."""
    if unified:
        root.mkdir(parents=True, exist_ok=True)
        (root / "cgroup.controllers").write_text("cpu memory io\n")
    else:
        (root / "blkio").mkdir(parents=True, exist_ok=True)
    cgroup = LabCgroup("reveal-lab/t1/h1", root)
    cgroup.create()
    return LabHost("h1", "rvl-t1-h1", "10.251.0.11", "rvlt10", cgroup, holder)


def test_a_hosts_network_counters_are_read_from_its_namespace_view(tmp_path):
    holder = subprocess.Popen(["sleep", "30"])
    try:
        host = lab_host(tmp_path / "cgroup", holder)
        loopback = interface_counters(host, "lo")
        assert set(loopback) == {"rx_bytes", "rx_packets", "tx_bytes", "tx_packets"}
        assert interface_counters(host, "no-such-if") == {}
        assert {"RetransSegs", "OutSegs", "InSegs"} <= set(tcp_counters(host))
    finally:
        holder.kill()
        holder.wait()
