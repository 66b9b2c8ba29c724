"""Every kind of fault the lab injects, by the name scenarios give it: the performance faults (on the network or
through the host's cgroup) and the configuration differences, in one table that scenarios and the runner read."""

from __future__ import annotations

from pathlib import Path

from reveal.lab.cgroup_faults import CpuContention, MemoryPressure, MemoryReservation, StorageBurst, Straggler
from reveal.lab.faults import BandwidthCap, Fault, FaultSpec, IrqPressure, PacketLoss
from reveal.lab.hosts import LabHost
from reveal.lab.setting_faults import SETTING_FAULTS

PERFORMANCE_FAULTS: dict[str, type[Fault]] = {
    "packet_loss": PacketLoss, "bandwidth_cap": BandwidthCap, "cpu_contention": CpuContention,
    "straggler": Straggler, "memory_pressure": MemoryPressure, "memory_reservation": MemoryReservation,
    "storage_burst": StorageBurst, "irq_pressure": IrqPressure,
}
FAULTS: dict[str, type[Fault]] = {**PERFORMANCE_FAULTS, **SETTING_FAULTS}


def make_fault(spec: FaultSpec, hosts: dict[str, LabHost], work_dir: Path) -> Fault:
    """The fault a spec names; ValueError names an unknown kind or host and the allowed ones."""
    if spec.kind not in FAULTS:
        raise ValueError(f"fault kind {spec.kind!r} is not one of {', '.join(FAULTS)}")
    if spec.host not in hosts:
        raise ValueError(f"fault {spec.kind} names host {spec.host!r}; the hosts are {', '.join(hosts)}")
    return FAULTS[spec.kind](spec, hosts, work_dir)
