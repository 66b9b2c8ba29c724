"""Every fault kind in one table: a spec made into its fault or refused with what is allowed, each kind in one family
(performance or configuration), and the fault described in its own unit."""

import pytest

from reveal.lab.cgroup_faults import CpuContention
from reveal.lab.fault_kinds import FAULTS, PERFORMANCE_FAULTS, make_fault
from reveal.lab.faults import FaultSpec
from reveal.lab.setting_faults import SETTING_FAULTS, CongestionControl, Mtu
from tests.reveal.lab.test_faults import lab_host


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


def test_every_kind_is_a_performance_fault_or_a_configuration_difference_but_not_both():
    assert set(FAULTS) == set(PERFORMANCE_FAULTS) | set(SETTING_FAULTS)
    assert not set(PERFORMANCE_FAULTS) & set(SETTING_FAULTS)
    assert [name for name, kind in FAULTS.items() if kind.takes_setting] == ["congestion_control"]


def test_a_setting_fault_is_made_from_its_spec_and_says_what_it_sets(tmp_path):
    hosts = {"h1": lab_host(tmp_path / "cgroup")}
    mtu = make_fault(FaultSpec("mtu", "h1", 0.0, 150.0, 1400.0, from_start=True), hosts, tmp_path)
    assert isinstance(mtu, Mtu) and mtu.subsystem == "network" and mtu.describe() == "mtu 1400 bytes on h1"
    reno = make_fault(FaultSpec("congestion_control", "h1", 0.0, 150.0, 0.0, True, "reno"), hosts, tmp_path)
    assert isinstance(reno, CongestionControl) and reno.describe() == "congestion_control reno on h1"
    buffers = make_fault(FaultSpec("tcp_buffers", "h1", 0.0, 150.0, 1048576.0, True), hosts, tmp_path)
    assert buffers.describe() == "tcp_buffers 1048576 bytes on h1"
