"""A quiet host before a test that judges or measures it: what earlier tests left behind has passed. A closed
connection's socket stays in TIME_WAIT for 60 s and dirty pages are written back within 30 s; a baseline learned
while they drain is a baseline of the previous test, and the host departs from it as they go."""

from __future__ import annotations

import time
from pathlib import Path

# Within this long of the last test everything it left has passed (TIME_WAIT's 60 s and writeback's 30 s, with room)
SETTLE_WITHIN_S = 90.0
# A quiet host's sockets in TIME_WAIT and pages waiting to be written (a few daemons keep a few)
QUIET_TIME_WAIT = 4
QUIET_UNWRITTEN_BYTES = 32 << 20
CHECK_EVERY_S = 1.0


def sockets_in_time_wait(procfs: Path = Path("/proc")) -> int:
    """The host's TCP sockets in TIME_WAIT, IPv4 and IPv6 ('TCP: inuse 5 orphan 0 tw 2 alloc 7 mem 1')."""
    waiting = 0
    for summary in ("net/sockstat", "net/sockstat6"):
        try:
            lines = (procfs / summary).read_text().splitlines()
        except OSError:  # a kernel without IPv6 has no sockstat6
            continue
        for line in lines:
            fields = line.split()
            if fields[:1] == ["TCP:"] and "tw" in fields:
                waiting += int(fields[fields.index("tw") + 1])
    return waiting


def unwritten_bytes(procfs: Path = Path("/proc")) -> int:
    """Pages of files written but not yet on their disks (Dirty and Writeback of /proc/meminfo), in bytes."""
    fields = dict(line.split(":", 1) for line in (procfs / "meminfo").read_text().splitlines() if ":" in line)
    return sum(int(fields.get(name, "0 kB").split()[0]) * 1024 for name in ("Dirty", "Writeback"))


def wait_until_settled(within_s: float = SETTLE_WITHIN_S) -> float:
    """Wait until the host holds no more than a quiet host's sockets in TIME_WAIT and unwritten pages, at most
    `within_s`; the seconds waited. A host that does not settle is judged as it is: the test then says what it saw."""
    started = time.monotonic()
    while time.monotonic() - started < within_s:
        if sockets_in_time_wait() <= QUIET_TIME_WAIT and unwritten_bytes() <= QUIET_UNWRITTEN_BYTES:
            break
        time.sleep(CHECK_EVERY_S)
    return time.monotonic() - started
