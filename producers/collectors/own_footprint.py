"""Reveal's own footprint on the host, measured from what the host shows, so that the engine can take it out of the
host's channels instead of blaming the host for it: the CPU time and memory of Reveal's processes (the agent's own,
which in `reveal run` is also the engine's and the embedded ClickHouse's, and those of its commands, see
producers.own_commands), the seconds its commands ran, and the TCP sockets on the ports the agent's process listens on
(the live page and query service of `reveal run`), those in TIME_WAIT included: a connection that closed stays there
for 60 s; and the page cache that the files of Reveal's data folder hold (`reveal run`'s embedded ClickHouse), which
outlasts the writes and reads that filled it.

Sockets come from /proc/net/tcp and tcp6 of the network namespace the agent watches; a listening port is Reveal's
when its socket is one of the agent process's descriptors (or the port is given).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Iterable, NamedTuple

from producers.collectors.base import Collector
from producers.collectors.page_cache import counts_page_cache, folder_page_cache
from producers.collectors.sockstat import SockStatCollector
from producers.own_commands import CommandLedger, process_cpu_ticks, process_memory_bytes
from schemas.channels import (AGENT_SUBSYSTEM, OWN_ANON_BYTES, OWN_CACHED_BYTES, OWN_COMMANDS_SECONDS,
                              OWN_COMMITTED_BYTES, OWN_CPU_SYSTEM_TICKS, OWN_CPU_USER_TICKS, OWN_DIRTY_BYTES,
                              OWN_TCP_CLOSED, OWN_TCP_OPEN, OWN_TCP_TIME_WAIT, OWN_WRITEBACK_BYTES)

log = logging.getLogger(__name__)

_UNITS = {OWN_COMMANDS_SECONDS: ("counter", "s"), OWN_CPU_USER_TICKS: ("counter", "ticks"),
          OWN_CPU_SYSTEM_TICKS: ("counter", "ticks"), OWN_ANON_BYTES: ("gauge", "bytes"),
          OWN_COMMITTED_BYTES: ("gauge", "bytes"), OWN_TCP_TIME_WAIT: ("gauge", "sockets"),
          OWN_TCP_OPEN: ("gauge", "sockets"), OWN_TCP_CLOSED: ("counter", "connections"),
          OWN_CACHED_BYTES: ("gauge", "bytes"), OWN_DIRTY_BYTES: ("gauge", "bytes"),
          OWN_WRITEBACK_BYTES: ("gauge", "bytes")}
TCP_TABLES = ("net/tcp", "net/tcp6")
# The host's counts of TCP sockets (in use, orphaned, in TIME_WAIT, allocated, their memory), IPv4 and IPv6
TCP_SUMMARIES = ("net/sockstat", "net/sockstat6")
# /proc/net/tcp's `st` column (include/net/tcp_states.h)
TIME_WAIT, LISTEN = b"06", b"0A"


class TcpEntry(NamedTuple):
    """One row of a TCP table: its ports, state (two hex digits), socket inode (0 in TIME_WAIT) and endpoints."""

    local_port: int
    remote_port: int
    state: bytes
    inode: int
    endpoints: bytes


def tcp_entries(text: bytes) -> Iterable[TcpEntry]:
    """The rows of /proc/net/tcp or tcp6 ('sl local_address rem_address st … uid timeout inode …'), addresses
    as ADDRESS:PORT in hexadecimal; a row that does not parse is skipped."""
    for line in text.splitlines()[1:]:
        fields = line.split()
        try:
            local, remote = fields[1], fields[2]
            yield TcpEntry(int(local[-4:], 16), int(remote[-4:], 16), fields[3], int(fields[9]), local + remote)
        except (IndexError, ValueError):
            continue


class OwnSockets:
    """Counts the sockets on Reveal's ports: those in TIME_WAIT, those open (connected or closing), and how many
    connections have closed (each leaves one socket in TIME_WAIT, so none is missed between two reads)."""

    def __init__(self, net_procfs: Path, procfs: Path, pid: int, ports: tuple[int, ...] = ()):
        self.tables = tuple(net_procfs / table for table in TCP_TABLES)
        self.summaries = tuple(net_procfs / summary for summary in TCP_SUMMARIES)
        self.descriptors = procfs / str(pid) / "fd"
        self.given_ports = frozenset(ports)
        self._listening: dict[int, int | None] = {}  # a listening socket's inode → its port when it is Reveal's
        self._time_wait: set[bytes] = set()
        self._last: tuple[bytes, tuple[int, int]] | None = None  # the host's TCP summary and the counts read with it
        self.closed = 0

    def count(self) -> tuple[int, int]:
        """(sockets in TIME_WAIT, sockets open) on Reveal's ports now; `closed` counts on. The tables are read only
        when the host's TCP summary has changed: the kernel walks every bucket of its socket hash to write them
        (milliseconds, however few the sockets)."""
        summary = b"".join(_tcp_lines(path) for path in self.summaries)
        if self._last is not None and self._last[0] == summary:
            return self._last[1]
        counts = self._counted([entry for table in self.tables for entry in _entries_of(table)])
        self._last = summary, counts
        return counts

    def _counted(self, entries: list[TcpEntry]) -> tuple[int, int]:
        ports = self.given_ports | self._own_listening_ports(entries)
        if not ports:
            self._time_wait = set()
            return 0, 0
        own = [entry for entry in entries if entry.state != LISTEN and
               (entry.local_port in ports or entry.remote_port in ports)]
        time_wait = {entry.endpoints for entry in own if entry.state == TIME_WAIT}
        self.closed += len(time_wait - self._time_wait)
        self._time_wait = time_wait
        return len(time_wait), len(own) - len(time_wait)

    def _own_listening_ports(self, entries: list[TcpEntry]) -> frozenset[int]:
        listening = {entry.inode: entry.local_port for entry in entries if entry.state == LISTEN}
        if listening.keys() - self._listening.keys():
            own = self._socket_inodes()
            self._listening = {inode: port if inode in own else None for inode, port in listening.items()}
        return frozenset(port for inode, port in self._listening.items() if port is not None and inode in listening)

    def _socket_inodes(self) -> set[int]:
        """The inodes of the sockets among the agent process's descriptors ('socket:[INODE]')."""
        inodes = set()
        try:
            descriptors = os.listdir(self.descriptors)
        except OSError:
            return inodes
        for descriptor in descriptors:
            try:
                target = os.readlink(self.descriptors / descriptor)
            except OSError:  # closed since it was listed
                continue
            if target.startswith("socket:["):
                inodes.add(int(target[8:-1]))
        return inodes


def _tcp_lines(summary: Path) -> bytes:
    """The TCP lines of /proc/net/sockstat or sockstat6 ('TCP: inuse 5 orphan 0 tw 2 alloc 7 mem 1')."""
    try:
        return b"".join(line for line in summary.read_bytes().splitlines(keepends=True) if line.startswith(b"TCP"))
    except OSError:  # a kernel built without IPv6 has no sockstat6
        return b""


def _entries_of(table: Path) -> list[TcpEntry]:
    try:
        return list(tcp_entries(table.read_bytes()))
    except OSError:  # a kernel built without IPv6 has no tcp6
        return []


class _OwnShareCollector(Collector):
    """A collector of Reveal's own channels (agent subsystem, units from the table above)."""

    def _channels_of(self, values: dict[str, float]) -> dict[str, float]:
        out: dict[str, float] = {}
        for name, value in values.items():
            self._put(out, name, "", float(value), AGENT_SUBSYSTEM, *_UNITS[name])
        return out


class OwnProcessesCollector(_OwnShareCollector):
    """The CPU time and memory of Reveal's processes and the seconds its commands ran, read after a block of ticks
    where the agent reads blocks (its reading stands for each tick of the block): the share is never known later than
    the load it explains."""

    source = "reveal_processes"
    explains_load = True

    def __init__(self, ledger: CommandLedger | None = None, procfs: str | Path = "/proc", pid: int | None = None):
        super().__init__(procfs)
        self.ledger = ledger if ledger is not None else CommandLedger(procfs=procfs)
        self.pid = os.getpid() if pid is None else pid

    def collect(self) -> dict[str, float]:
        commands_s = self.ledger.running_seconds()
        user, system = self.ledger.cpu_ticks()
        own_user, own_system = process_cpu_ticks(self.pid, self.procfs) or (0.0, 0.0)
        anon, committed = self.ledger.memory_bytes()
        own_anon, own_committed = process_memory_bytes(self.pid, self.procfs)
        return self._channels_of({OWN_COMMANDS_SECONDS: commands_s, OWN_CPU_USER_TICKS: user + own_user,
                                  OWN_CPU_SYSTEM_TICKS: system + own_system, OWN_ANON_BYTES: anon + own_anon,
                                  OWN_COMMITTED_BYTES: committed + own_committed})

    def close(self) -> None:
        self.ledger.close()


class OwnSocketsCollector(_OwnShareCollector):
    """Reveal's sockets, read as often as /proc/net/sockstat and just after it (see SockStatCollector.scan_plan):
    the host's count and Reveal's share of it are of one instant."""

    source = "reveal_sockets"
    # Reading the TCP tables costs milliseconds on a host with many sockets (the kernel walks them all)
    default_interval_s = SockStatCollector.default_interval_s

    def __init__(self, procfs: str | Path = "/proc", net_procfs: str = "", pid: int | None = None,
                 ports: tuple[int, ...] = ()):
        super().__init__(procfs)
        self.sockets = OwnSockets(Path(net_procfs or procfs), self.procfs, os.getpid() if pid is None else pid,
                                  ports)

    def collect(self) -> dict[str, float]:
        time_wait, open_sockets = self.sockets.count()
        return self._channels_of({OWN_TCP_TIME_WAIT: time_wait, OWN_TCP_OPEN: open_sockets,
                                  OWN_TCP_CLOSED: self.sockets.closed})


class OwnStorageCollector(_OwnShareCollector):
    """The page cache of Reveal's data folder, read every few seconds after a block of ticks (its reading stands for
    each tick until the next). Where the kernel cannot count a file's cache (before Linux 6.5), the source is left
    out."""

    source = "reveal_storage"
    explains_load = True
    # A level that moves by the kilobytes Reveal stores a second; a read costs a few microseconds a file
    default_interval_s = 5.0

    def __init__(self, data_dir: str | Path, procfs: str | Path = "/proc"):
        super().__init__(procfs)
        self.data_dir = Path(data_dir)

    def available(self) -> bool:
        if not counts_page_cache():
            log.warning("%s: this kernel does not count a file's page cache (cachestat, Linux 6.5+); the page cache of "
                        "%s is left in the host's memory channels", self.source, self.data_dir)
            return False
        return super().available()

    def collect(self) -> dict[str, float]:
        cached = folder_page_cache(self.data_dir)
        return self._channels_of({OWN_CACHED_BYTES: cached.cached, OWN_DIRTY_BYTES: cached.dirty,
                                  OWN_WRITEBACK_BYTES: cached.writeback})
