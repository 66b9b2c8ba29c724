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

# Reveal's own footprint on the host, measured by the agent (producers/collectors/own_footprint.py): the seconds its
# commands (`reveal sql`, `report` …) ran, its processes' CPU time in clock ticks (counters) and memory in bytes
# (anonymous, and committed: private writable), and the TCP sockets on the ports it listens on: in TIME_WAIT and
# open now (gauges), and the connections that closed (a counter).
OWN_COMMANDS_SECONDS = "agent.reveal_commands_s"
OWN_CPU_USER_TICKS = "agent.reveal_cpu_user_ticks"
OWN_CPU_SYSTEM_TICKS = "agent.reveal_cpu_system_ticks"
OWN_ANON_BYTES = "agent.reveal_anon_bytes"
OWN_COMMITTED_BYTES = "agent.reveal_committed_bytes"
OWN_TCP_TIME_WAIT = "agent.reveal_tcp_time_wait"
OWN_TCP_OPEN = "agent.reveal_tcp_open"
OWN_TCP_CLOSED = "agent.reveal_tcp_closed"
# The page cache of Reveal's data folder (`reveal run`): bytes cached, and of those dirty and under writeback.
OWN_CACHED_BYTES = "agent.reveal_cached_bytes"
OWN_DIRTY_BYTES = "agent.reveal_dirty_bytes"
OWN_WRITEBACK_BYTES = "agent.reveal_writeback_bytes"
# The host's channels that hold a share measured as Reveal's: (host channel, Reveal's share, +1 to take it out or -1
# to give it back: the CPU time and memory Reveal holds would otherwise be idle or free). A share in bytes is taken
# out of a channel in pages as that many pages.
OWN_SHARES = (("sock.tcp_tw", OWN_TCP_TIME_WAIT, 1), ("sock.tcp_inuse", OWN_TCP_OPEN, 1),
              ("sock.tcp_alloc", OWN_TCP_OPEN, 1), ("sock.sockets_used", OWN_TCP_OPEN, 1),
              ("snmp.Tcp.CurrEstab", OWN_TCP_OPEN, 1), ("cpu.user.all", OWN_CPU_USER_TICKS, 1),
              ("cpu.system.all", OWN_CPU_SYSTEM_TICKS, 1), ("cpu.idle.all", OWN_CPU_USER_TICKS, -1),
              ("cpu.idle.all", OWN_CPU_SYSTEM_TICKS, -1), ("mem.AnonPages", OWN_ANON_BYTES, 1),
              ("mem.MemFree", OWN_ANON_BYTES, -1), ("mem.MemAvailable", OWN_ANON_BYTES, -1),
              ("mem.Committed_AS", OWN_COMMITTED_BYTES, 1), ("mem.Cached", OWN_CACHED_BYTES, 1),
              ("vm.nr_file_pages", OWN_CACHED_BYTES, 1), ("mem.MemFree", OWN_CACHED_BYTES, -1),
              ("mem.Dirty", OWN_DIRTY_BYTES, 1), ("vm.nr_dirty", OWN_DIRTY_BYTES, 1),
              ("mem.Writeback", OWN_WRITEBACK_BYTES, 1), ("vm.nr_writeback", OWN_WRITEBACK_BYTES, 1))
# Reveal is at work (a command runs, a page or query is served) while these move (counters) or are above zero.
OWN_WORK = (OWN_COMMANDS_SECONDS, OWN_TCP_OPEN, OWN_TCP_CLOSED)
# What Reveal's work moves on the host without a share the agent can measure at the moment it moves: time per CPU and
# what the scheduler counts, memory levels and work, pressure, sockets, loopback and host-wide TCP/IP traffic, disks
# (memory and socket levels hold its share besides, for what outlasts the work). The CPU totals (`.all`) hold its
# share, measured over the window, instead; retransmissions and GPUs it does not move.
_MOVED_BY_OWN_WORK = re.compile(r"cpu\.(?!\w+\.all$).*|(irq|softirq|psi|mem|vm|numa|cgroup|pmu|disk|sock)\..*|"
                                r"snmp\.(Tcp|TcpExt|Ip|IpExt)\.(?!RetransSegs$|TCPDSACKRecvSegs$).*|"
                                r"net\.(\w+\.lo|softnet_\w+\.\w+)")


def moved_by_own_work(name: str) -> bool:
    """Whether Reveal's own work moves the channel without a measured share of its own: while Reveal works, it is left
    out of the host's judgement.

    >>> moved_by_own_work("cpu.user.cpu0"), moved_by_own_work("cpu.user.all"), moved_by_own_work("gpu.util.gpu0")
    (True, False, False)
    >>> moved_by_own_work("snmp.TcpExt.TCPPureAcks"), moved_by_own_work("snmp.Tcp.RetransSegs")
    (True, False)
    >>> [moved_by_own_work(name) for name in ("net.rx_bytes.lo", "net.softnet_processed.cpu0", "net.rx_bytes.eth0")]
    [True, True, False]
    """
    return _MOVED_BY_OWN_WORK.fullmatch(name) is not None

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
