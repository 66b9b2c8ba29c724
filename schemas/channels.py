"""The one place that names subsystems, channel families and the channels more than one layer reads by name."""

from __future__ import annotations

import re

# The parts of a host a channel describes; "agent" is the agent's own cost, not the host's workload.
HOST_SUBSYSTEMS = ("cpu", "gpu", "memory", "network", "storage")
AGENT_SUBSYSTEM = "agent"
SUBSYSTEMS = HOST_SUBSYSTEMS + (AGENT_SUBSYSTEM,)
UNKNOWN_SUBSYSTEM = "other"
# CPU time is how most faults show, whatever their cause: the subsystem named only when no other moved.
CPU = HOST_SUBSYSTEMS[0]

# Channel families: Reveal's channel names start with their source; longer prefixes first so cgroup channels split
# by controller.
AGENT_PREFIX = "agent."
CHANNEL_FAMILIES = (
    ("cgroup.cpu_", "cpu"), ("cgroup.memory_", "memory"), ("cgroup.io_", "storage"),
    ("cpu.", "cpu"), ("pmu.", "cpu"), ("irq.", "cpu"), ("softirq.", "cpu"),
    ("gpu.", "gpu"),
    ("mem.", "memory"), ("vm.", "memory"), ("numa.", "memory"),
    ("net.", "network"), ("snmp.", "network"), ("sock.", "network"), ("ib.", "network"),
    ("disk.", "storage"),
    (AGENT_PREFIX, AGENT_SUBSYSTEM),
)

# Memory operations every running program performs: pages faulted in, allocated, freed, reused or moved between the
# active and inactive lists, and NUMA allocations placed where they were asked for. They count work, as CPU time
# does, not the state of memory (what is held, free, reclaimed, swapped or placed on the wrong node): they name memory
# only when nothing else moved (a fork storm reuses pages by the hundred thousand, and is the CPU's).
_PAGE_WORK = re.compile(r"vm\.(pgfault|pgalloc_\w+|pgfree|pgreuse|pgactivate|pgdeactivate|pglazyfreed?|numa_hit|"
                        r"numa_local|numa_interleave|thp_fault_alloc)|numa\.(numa_hit|local_node|interleave_hit)\.\S+|"
                        r"cgroup\.memory_pgfault\.\S+")


def counts_page_work(name: str) -> bool:
    """Whether the channel counts memory operations of whatever runs rather than the state of memory.

    >>> counts_page_work("vm.pgreuse"), counts_page_work("numa.numa_hit.node0"), counts_page_work("vm.numa_miss")
    (True, True, False)
    """
    return _PAGE_WORK.fullmatch(name) is not None


# The host's memory, the scale of what a change of a memory level means there.
MEM_TOTAL = "mem.MemTotal"

# Seconds Reveal's own commands (`reveal sql`, `report` …) have run on the host, a counter: while it moves, and for
# a few seconds after, the host's load is partly Reveal's own.
OWN_COMMANDS_SECONDS = "agent.reveal_commands_s"

# TCP segments retransmitted and sent, host-wide (/proc/net/snmp).
TCP_RETRANSMITS = "snmp.Tcp.RetransSegs"
TCP_OUT_SEGMENTS = "snmp.Tcp.OutSegs"
# Linux counts the retransmissions a receiver confirmed as needless (it had the segment) under this counter.
TCP_SPURIOUS_RETRANSMITS = "snmp.TcpExt.TCPDSACKRecvSegs"
# Bytes sent per interface: the family's prefix, followed by the interface name.
NET_TX_BYTES_PREFIX = "net.tx_bytes."
# The derived share of time all CPUs were busy, and GPU utilisation per GPU (prefix, then gpu0, gpu1, …).
CPU_BUSY_PCT_ALL = "cpu.busy_pct.all"
GPU_UTILIZATION_PREFIX = "gpu.utilization."


def subsystem_for(name: str) -> str:
    """The subsystem a Reveal channel name belongs to, or 'other' for names that do not follow Reveal's scheme.

    >>> subsystem_for("gpu.util.gpu0"), subsystem_for("gpu_util")
    ('gpu', 'other')
    """
    return next((subsystem for prefix, subsystem in CHANNEL_FAMILIES if name.startswith(prefix)),
                UNKNOWN_SUBSYSTEM)
