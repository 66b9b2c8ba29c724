"""Reveal's own footprint over /proc/net/tcp and tcp6 captured on a Linux 6.x VM (an HTTP service on port 9931 that
had answered three IPv4 and one IPv6 request and held one connection of each open) and over the live /proc."""

import os
import shutil
import socket
import subprocess
import sys
import time

from producers.collectors.own_footprint import (OwnProcessesCollector, OwnSockets, OwnSocketsCollector,
                                                tcp_entries)
from producers.own_commands import CommandLedger, noted_command
from schemas.channels import (OWN_ANON_BYTES, OWN_COMMITTED_BYTES, OWN_CPU_SYSTEM_TICKS, OWN_CPU_USER_TICKS,
                              OWN_TCP_CLOSED, OWN_TCP_OPEN, OWN_TCP_TIME_WAIT)

SERVICE_PORT = 9931
SERVICE_INODES = (139266, 139430)  # its IPv4 and IPv6 listening sockets in the captured tables


def test_the_tables_rows_give_ports_state_and_inode(procfs):
    rows = list(tcp_entries((procfs / "net" / "tcp").read_bytes()))
    assert len(rows) == 8
    listening = [row for row in rows if row.state == b"0A"]
    assert {row.local_port for row in listening} == {2024, SERVICE_PORT, 35351}
    waiting = [row for row in rows if row.state == b"06"]
    assert len(waiting) == 3 and all(row.inode == 0 for row in waiting)
    assert {row.remote_port for row in waiting} == {0xE03E, 0xE03C, SERVICE_PORT}


def test_sockets_on_a_given_port_are_counted_by_state_in_both_tables(procfs):
    sockets = OwnSockets(procfs, procfs, pid=1, ports=(SERVICE_PORT,))
    assert sockets.count() == (4, 4)  # TIME_WAIT: three IPv4, one IPv6; open: a connection's two ends in each
    assert sockets.closed == 4
    assert sockets.count() == (4, 4) and sockets.closed == 4, "a socket still in TIME_WAIT is no new connection"


def test_the_tables_are_read_again_only_once_the_hosts_tcp_summary_changed(procfs, tmp_path):
    root = tmp_path / "proc"
    shutil.copytree(procfs / "net", root / "net")
    sockets = OwnSockets(root, root, pid=1, ports=(SERVICE_PORT,))
    assert sockets.count() == (4, 4)
    waiting = b"".join(line for line in (root / "net" / "tcp").read_bytes().splitlines(keepends=True)
                       if b" 06 " not in line)
    (root / "net" / "tcp").write_bytes(waiting)
    assert sockets.count() == (4, 4)
    summary = (root / "net" / "sockstat").read_bytes()
    (root / "net" / "sockstat").write_bytes(summary.replace(b" tw ", b" tw 1"))
    assert sockets.count() == (1, 4)


def test_a_port_is_reveals_when_its_listening_socket_is_one_of_the_agent_process_descriptors(procfs, tmp_path):
    root = tmp_path / "proc"
    shutil.copytree(procfs / "net", root / "net")
    (root / "4242" / "fd").mkdir(parents=True)
    os.symlink("socket:[1081]", root / "4242" / "fd" / "3")  # port 2024: not the service
    before_it_listened = OwnSockets(root, root, pid=4242)
    assert before_it_listened.count() == (0, 0)
    os.symlink(f"socket:[{SERVICE_INODES[0]}]", root / "4242" / "fd" / "4")
    os.symlink(f"socket:[{SERVICE_INODES[1]}]", root / "4242" / "fd" / "5")
    assert OwnSockets(root, root, pid=4242).count() == (4, 4)
    assert before_it_listened.count() == (0, 0), "a listening socket's owner is looked up once, when it shows"


def test_the_collector_counts_the_connections_to_this_process_s_own_service():
    service = socket.create_server(("127.0.0.1", 0))
    collector = OwnSocketsCollector()
    before = collector.collect()
    for _ in range(3):
        client = socket.create_connection(service.getsockname())
        accepted, _ = service.accept()
        client.close()  # the side that closes first keeps the TIME_WAIT socket
        accepted.close()
    held = socket.create_connection(service.getsockname())
    kept, _ = service.accept()
    after = collector.collect()
    held.close(), kept.close(), service.close()
    assert before[OWN_TCP_TIME_WAIT] == before[OWN_TCP_OPEN] == 0
    assert after[OWN_TCP_TIME_WAIT] == 3 and after[OWN_TCP_OPEN] == 2 and after[OWN_TCP_CLOSED] == 3
    assert collector.describe(OWN_TCP_TIME_WAIT).kind == "gauge"
    assert collector.describe(OWN_TCP_CLOSED).kind == "counter"


def test_reveals_cpu_time_and_memory_are_the_agent_process_s_and_its_commands(procfs, tmp_path):
    captured = OwnProcessesCollector(CommandLedger(tmp_path, procfs), procfs, pid=4242).collect()
    assert captured[OWN_CPU_USER_TICKS] == 679.0 and captured[OWN_CPU_SYSTEM_TICKS] == 245.0
    assert captured[OWN_ANON_BYTES] == 6940 * 1024 and captured[OWN_COMMITTED_BYTES] == (7972 + 132) * 1024
    collector = OwnProcessesCollector(CommandLedger(tmp_path), pid=os.getpid())
    before = collector.collect()
    with noted_command("sql", tmp_path):
        _burn_cpu(0.3)
    after = collector.collect()
    own_only = OwnProcessesCollector(CommandLedger(tmp_path / "none"), pid=os.getpid()).collect()
    ticks = os.sysconf("SC_CLK_TCK")
    used = after[OWN_CPU_USER_TICKS] + after[OWN_CPU_SYSTEM_TICKS] - before[OWN_CPU_USER_TICKS] - \
        before[OWN_CPU_SYSTEM_TICKS]
    assert used >= 0.2 * ticks
    assert after[OWN_CPU_USER_TICKS] > own_only[OWN_CPU_USER_TICKS], "the ended command's time counts besides"
    assert collector.describe(OWN_CPU_SYSTEM_TICKS).unit == "ticks"


def test_a_running_command_s_memory_counts_until_it_ends(tmp_path):
    code = ("import sys, time\nfrom pathlib import Path\nfrom producers.own_commands import noted_command\n"
            f"with noted_command('report', Path({str(tmp_path)!r})):\n    held = bytearray(64 << 20)\n"
            "    print('noted', flush=True)\n    sys.stdin.readline()\n")
    command = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert command.stdout.readline().strip() == "noted"
    collector = OwnProcessesCollector(CommandLedger(tmp_path), pid=os.getpid())
    during = collector.collect()
    command.communicate("\n", timeout=60)
    after = collector.collect()
    assert during[OWN_ANON_BYTES] - after[OWN_ANON_BYTES] > 60 << 20
    assert during[OWN_COMMITTED_BYTES] - after[OWN_COMMITTED_BYTES] > 60 << 20
    assert collector.describe(OWN_ANON_BYTES).unit == "bytes"


def _burn_cpu(seconds: float) -> None:
    started = time.process_time()
    while time.process_time() - started < seconds:
        pass
