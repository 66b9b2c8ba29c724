"""What of the lab's faults works without root: a spec made into its fault or refused with what is allowed, the fault
described in its own unit, and the counters faults are measured by (a process's CPU, a host's interface and TCP
counters, its cgroup's written bytes in either layout)."""

import subprocess
import sys
import time

import pytest

from reveal.lab.faults import (FAULTS, CpuContention, FaultSpec, host_written_bytes, interface_counters, make_fault,
                               process_cpu_s, tcp_counters)
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


def test_a_spec_becomes_its_fault_or_is_refused_with_what_is_allowed(tmp_path):
    hosts = {"h1": lab_host(tmp_path / "cgroup")}
    fault = make_fault(FaultSpec("cpu_contention", "h1", 90.0, 30.0, 2.0), hosts, tmp_path)
    assert isinstance(fault, CpuContention) and fault.host is hosts["h1"] and fault.subsystem == "cpu"
    assert fault.describe() == "cpu_contention of 2 busy processes on h1"
    assert make_fault(FaultSpec("packet_loss", "h1", 90.0, 30.0, 0.01), hosts, tmp_path).describe() == \
        "packet_loss of 0.01 of packets on h1"
    with pytest.raises(ValueError, match="fault kind 'meteor' is not one of packet_loss, bandwidth_cap"):
        make_fault(FaultSpec("meteor", "h1", 90.0, 30.0, 1.0), hosts, tmp_path)
    with pytest.raises(ValueError, match="names host 'h9'; the hosts are h1"):
        make_fault(FaultSpec("straggler", "h9", 90.0, 30.0, 0.2), hosts, tmp_path)
    assert {kind.subsystem for kind in FAULTS.values()} <= {"cpu", "memory", "network", "storage"}


def test_a_process_cpu_is_counted_while_it_runs_and_zero_once_gone():
    busy = subprocess.Popen([sys.executable, "-c", "import time\nend = time.time() + 0.5\nwhile time.time() < end: pass"])
    time.sleep(0.4)
    assert process_cpu_s(busy) >= 0.1
    busy.wait()
    assert process_cpu_s(busy) == 0.0


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


def test_written_bytes_are_summed_over_the_cgroups_disks_in_either_layout(tmp_path):
    unified = lab_host(tmp_path / "v2")
    (tmp_path / "v2/reveal-lab/t1/h1/job/io.stat").write_text(
        "8:0 rbytes=4096 wbytes=1048576 rios=1 wios=16\n259:0 rbytes=0 wbytes=4096 rios=0 wios=1\n")
    assert host_written_bytes(unified) == 1048576 + 4096
    legacy = lab_host(tmp_path / "v1", unified=False)
    (tmp_path / "v1/blkio/reveal-lab/t1/h1/job/blkio.throttle.io_service_bytes").write_text(
        "8:0 Read 4096\n8:0 Write 2048\n8:0 Total 6144\n259:0 Write 1024\nTotal 7168\n")
    assert host_written_bytes(legacy) == 2048 + 1024
