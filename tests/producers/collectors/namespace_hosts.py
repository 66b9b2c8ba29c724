"""Network namespaces of this machine the network collectors' tests read, each reached through /proc/PID of a process
inside it, as the lab's emulated hosts are."""

from __future__ import annotations

import os
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator


@dataclass(frozen=True)
class NamespaceHost:
    """A network namespace reached through /proc/PID of a process inside it, and the two ends of its veth pair."""

    namespace: str
    procfs: str
    outside: str
    inside: str


def run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True)


@contextmanager
def veth_namespace(prefix: str) -> Iterator[NamespaceHost]:
    """A namespace holding one end of a veth pair, with a sleeping process inside; all of it is removed afterwards.
    Names carry the prefix and this test process's id, so parallel runs and different tests differ."""
    namespace, outside, inside = f"reveal-{prefix}-{os.getpid()}", f"{prefix}{os.getpid()}o", f"{prefix}{os.getpid()}i"
    holder = None
    try:
        run("ip", "netns", "add", namespace)
        run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
        run("ip", "link", "set", inside, "netns", namespace)
        holder = subprocess.Popen(["ip", "netns", "exec", namespace, "sleep", "60"])
        wait_until_inside(f"/proc/{holder.pid}", f"/run/netns/{namespace}")
        yield NamespaceHost(namespace, f"/proc/{holder.pid}", outside, inside)
    finally:
        if holder is not None:
            holder.kill()
            holder.wait()
        subprocess.run(["ip", "netns", "del", namespace], capture_output=True)
        subprocess.run(["ip", "link", "del", outside], capture_output=True)


def wait_until_inside(procfs: str, namespace_file: str, timeout_s: float = 10.0) -> None:
    """Until `ip netns exec` has moved the process into the namespace, /proc/PID shows the machine's own."""
    deadline = time.monotonic() + timeout_s
    while os.stat(f"{procfs}/ns/net").st_ino != os.stat(namespace_file).st_ino:
        assert time.monotonic() < deadline, f"{procfs} did not enter {namespace_file}"
        time.sleep(0.01)
