"""Emulated hosts on one machine: a network namespace on a shared bridge plus a cgroup, per host.

Each host gets its own addresses, interfaces and TCP counters (the namespace) and its own CPU, memory and I/O
accounting (the cgroup), so an agent that reads the namespace's /proc/PID/net and the host's cgroup sees channels
that differ between hosts as they would between machines. Everything created is named with the run's tag and
removed on exit, and `remove_leftovers` clears what an interrupted run left behind.

Needs root, iproute2 and, for packet loss, nftables. Verified on Linux 6.x with cgroup v1 hierarchies (cpu, cpuacct,
memory, blkio) and on the cgroup v2 unified layout.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

NAME_PREFIX = "rvl"
CGROUP_TOP = "reveal-lab"
SUBNET_PREFIX = "10.251"
SLOTS = 8
V1_HIERARCHIES = ("cpu", "cpuacct", "memory", "blkio")
V2_CONTROLLERS = "+cpu +memory +io"


LOCK_DIR = Path("/tmp")
AGENTS_GROUP = "agents"
UNLIMITED_BYTES_PER_S = 1 << 40


def block_devices(sys_block: Path = Path("/sys/block")) -> list[str]:
    """MAJOR:MINOR of every whole disk (loop and RAM devices left out)."""
    if not sys_block.is_dir():
        return []
    return [(path / "dev").read_text().strip() for path in sorted(sys_block.iterdir())
            if (path / "dev").exists() and not path.name.startswith(("loop", "ram", "zram"))]


class LabError(RuntimeError):
    """The lab could not build or drive its hosts; the message names the command and what it said."""


class LabLock:
    """A lab's claim on one slot of the machine: each slot has its own bridge subnet (10.251.SLOT.0/24), so up to
    SLOTS labs run side by side. `every_slot` claims them all, for cleaning up when no lab runs."""

    def __init__(self, every_slot: bool = False):
        self.every_slot = every_slot
        self.slot = -1
        self._files = []

    def __enter__(self) -> "LabLock":
        for slot in range(SLOTS):
            handle = open(LOCK_DIR / f"reveal-lab-{slot}.lock", "w")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                if self.every_slot:
                    self.__exit__()
                    raise LabError(f"a lab is running on this machine (slot {slot} is taken)") from None
                continue
            self._files.append(handle)
            if not self.every_slot:
                self.slot = slot
                return self
        if not self.every_slot:
            raise LabError(f"{SLOTS} labs are already running on this machine")
        return self

    def __exit__(self, *_) -> None:
        for handle in self._files:
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()
        self._files.clear()


def run_command(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run a system command; LabError with its stderr when it fails and `check` is set."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except FileNotFoundError as error:
        raise LabError(f"{argv[0]} is not installed (the lab needs iproute2 and nftables)") from error
    if check and done.returncode != 0:
        raise LabError(f"`{' '.join(argv)}` failed: {done.stderr.strip() or done.stdout.strip()}")
    return done


class LabCgroup:
    """One host's cgroup: `reveal-lab/<tag>/<host>/job` in every hierarchy the agent reads (v2, or v1's cpu, cpuacct,
    memory and blkio), so the agent's cgroup collector reports it as the container `job` of parent
    `reveal-lab/<tag>/<host>`."""

    def __init__(self, parent: str, root: Path = Path("/sys/fs/cgroup")):
        self.parent = parent
        self.root = root
        self.unified = (root / "cgroup.controllers").exists()
        bases = [root] if self.unified else [root / h for h in V1_HIERARCHIES if (root / h).is_dir()]
        if not bases:
            raise LabError(f"no cgroup hierarchy under {root}")
        self.directories = [base / parent / "job" for base in bases]

    def create(self) -> None:
        for directory in self.directories:
            directory.mkdir(parents=True, exist_ok=True)
        if self.unified:
            self._enable_controllers()
        else:
            self._account_block_io()

    def _account_block_io(self) -> None:
        """v1's blkio counts a group's I/O only where a throttle rule applies to it: a rule per disk far above any
        disk's speed makes the host's reads and writes show in its counters without limiting them."""
        rules = [f"{device} {UNLIMITED_BYTES_PER_S}" for device in block_devices()]
        for directory in (d for d in self.directories if (d / "blkio.throttle.write_bps_device").exists()):
            for rule in rules:
                for name in ("blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device"):
                    try:
                        (directory / name).write_text(rule)
                    except OSError as error:
                        log.warning("cannot account block I/O of %s on %s: %s", directory, rule, error)

    def add(self, pid: int) -> None:
        """Move a process (and so its future children) into the host."""
        for directory in self.directories:
            (directory / "cgroup.procs").write_text(str(pid))

    def write(self, v2_file: str, v2_value: str, v1_file: str, v1_value: str) -> None:
        """Set a limit in whichever layout this machine has."""
        name, value = (v2_file, v2_value) if self.unified else (v1_file, v1_value)
        for directory in self.directories:
            if (directory / name).exists():
                (directory / name).write_text(value)
                return
        raise LabError(f"no cgroup file {name} under {self.parent}")

    def read(self, v2_file: str, v1_file: str) -> str:
        name = v2_file if self.unified else v1_file
        for directory in self.directories:
            if (directory / name).exists():
                return (directory / name).read_text().strip()
        raise LabError(f"no cgroup file {name} under {self.parent}")

    def remove(self) -> None:
        """Remove the host's groups; the run's and the lab's top groups go with the last host that leaves them."""
        for directory in self.directories:
            for path in (directory, directory.parent):
                _remove_directory(path, shared=False)
            for path in (directory.parent.parent, directory.parent.parent.parent):
                _remove_directory(path, shared=True)

    def set_cpu_shares(self, relative: str, shares: int) -> None:
        """CPU weight of a group relative to the cgroup root: v1's cpu.shares (1024 is a plain process's weight),
        or v2's cpu.weight scaled to it (100 for 1024)."""
        if self.unified:
            target, value = self.root / relative / "cpu.weight", max(1, min(10000, shares * 100 // 1024))
        else:
            target, value = self.root / "cpu" / relative / "cpu.shares", shares
        if not target.parent.is_dir():
            return
        try:
            target.write_text(str(value))
        except OSError as error:
            log.warning("cannot set the CPU weight of %s: %s", target, error)

    def _enable_controllers(self) -> None:
        """cgroup v2 hands controllers down level by level: root, reveal-lab, the run, the host."""
        job = self.directories[0]
        for level in reversed(range(1, len(Path(self.parent).parts) + 2)):
            try:
                (job.parents[level - 1] / "cgroup.subtree_control").write_text(V2_CONTROLLERS)
            except OSError as error:
                log.warning("cannot enable %s under %s: %s", V2_CONTROLLERS, job.parents[level - 1], error)


@dataclass
class LabHost:
    """One emulated host: its name, namespace, address, root-side veth and cgroup."""

    name: str
    namespace: str
    address: str
    veth: str
    cgroup: LabCgroup
    holder: subprocess.Popen | None = None
    processes: list[subprocess.Popen] = field(default_factory=list)

    @property
    def net_procfs(self) -> str:
        """/proc/PID of a process inside the namespace: its net/ shows this host's network view."""
        if self.holder is None:
            raise LabError(f"host {self.name} is not started")
        return f"/proc/{self.holder.pid}"

    def spawn(self, argv: list[str], log_path: Path | None = None, in_cgroup: bool = True) -> subprocess.Popen:
        """Start a process inside this host's namespace (and cgroup); the lab stops it at the end."""
        output = open(log_path, "ab") if log_path else subprocess.DEVNULL
        try:
            process = subprocess.Popen(["ip", "netns", "exec", self.namespace, *argv], stdout=output,
                                       stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            if log_path:
                output.close()
        if in_cgroup:
            self.cgroup.add(process.pid)
        self.processes.append(process)
        return process

    def stop_processes(self, grace_s: float = 5.0) -> None:
        stop_all(self.processes, grace_s)
        self.processes.clear()


def wait_until_inside(host: LabHost, timeout_s: float = 10.0) -> None:
    """Wait until the host's holder process has entered its namespace: until then its /proc/PID/net shows the
    machine's own network, and an agent started on it would read the wrong counters."""
    namespace = os.stat(f"/run/netns/{host.namespace}").st_ino
    deadline = time.monotonic() + timeout_s
    while os.stat(f"{host.net_procfs}/ns/net").st_ino != namespace:
        if host.holder.poll() is not None or time.monotonic() > deadline:
            raise LabError(f"host {host.name}: its holder process did not enter namespace {host.namespace}")
        time.sleep(0.01)


def stop_all(processes: list[subprocess.Popen], grace_s: float = 5.0) -> None:
    """SIGTERM each process group, then SIGKILL what is still running after the grace period."""
    for process in processes:
        _signal_group(process, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for process in processes:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal_group(process, signal.SIGKILL)
            process.wait(5)


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    if process.poll() is None:
        try:
            os.killpg(process.pid, signum)
        except ProcessLookupError:
            pass


class LabNetwork:
    """A bridge and N hosts on it, named by the run's tag; a context manager that always cleans up."""

    def __init__(self, tag: str, host_names: list[str], cgroup_root: Path = Path("/sys/fs/cgroup"),
                 cpu_shares: int = 1024):
        if not tag.isalnum() or len(tag) > 6:
            raise ValueError(f"lab tag {tag!r} must be 1–6 letters or digits (interface names are short)")
        if os.geteuid() != 0:
            raise LabError("the lab needs root: it creates network namespaces, bridges and cgroups")
        self.tag = tag
        self.cpu_shares = cpu_shares
        self.bridge = f"{NAME_PREFIX}br{tag}"
        self.subnet = ""
        self.hosts = {name: LabHost(name, f"{NAME_PREFIX}-{tag}-{name}", "", f"{NAME_PREFIX}{tag}{index}",
                                    LabCgroup(f"{CGROUP_TOP}/{tag}/{name}", cgroup_root))
                      for index, name in enumerate(host_names)}
        self.agents = LabCgroup(f"{CGROUP_TOP}/{tag}/{AGENTS_GROUP}", cgroup_root)

    def __enter__(self) -> "LabNetwork":
        self._lock = LabLock().__enter__()
        self.subnet = f"{SUBNET_PREFIX}.{self._lock.slot}"
        for tag in stale_labs_on(self.bridge_address):
            remove_leftovers(tag)
        for index, host in enumerate(self.hosts.values()):
            host.address = f"{self.subnet}.{11 + index}"
        try:
            self._create()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_):
        try:
            self.remove()
        finally:
            self._lock.__exit__()

    @property
    def bridge_address(self) -> str:
        return f"{self.subnet}.1"

    def _create(self) -> None:
        """The bridge, then each host: namespace, veth pair (sending MTU-sized frames, as a wire carries, so a lost
        frame is one lost segment), addresses, cgroup and the holder process that keeps the namespace."""
        run_command("ip", "link", "add", self.bridge, "type", "bridge")
        run_command("ip", "addr", "add", f"{self.bridge_address}/24", "dev", self.bridge)
        run_command("ip", "link", "set", self.bridge, "up")
        for host in self.hosts.values():
            run_command("ip", "netns", "add", host.namespace)
            run_command("ip", "link", "add", host.veth, "type", "veth", "peer", "name", "eth0", "netns",
                        host.namespace)
            run_command("ip", "link", "set", host.veth, "master", self.bridge, "up")
            run_command("ip", "link", "set", host.veth, "gso_max_segs", "1")
            run_command("ip", "-n", host.namespace, "link", "set", "eth0", "gso_max_segs", "1")
            run_command("ip", "-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", "eth0")
            run_command("ip", "-n", host.namespace, "link", "set", "eth0", "up")
            run_command("ip", "-n", host.namespace, "link", "set", "lo", "up")
            host.cgroup.create()
            host.holder = host.spawn(["sleep", "infinity"])
        for host in self.hosts.values():
            wait_until_inside(host)
        self.agents.create()
        self.agents.set_cpu_shares(f"{CGROUP_TOP}/{self.tag}", self.cpu_shares)
        log.info("lab network %s: %s", self.bridge, ", ".join(f"{h.name}={h.address}" for h in self.hosts.values()))

    def remove(self) -> None:
        """Stop every process of every host and delete namespaces, bridge and cgroups; safe to call twice."""
        for host in self.hosts.values():
            host.stop_processes()
            host.holder = None
        for host in self.hosts.values():
            run_command("ip", "netns", "del", host.namespace, check=False)
            run_command("ip", "link", "del", host.veth, check=False)
            host.cgroup.remove()
        self.agents.remove()
        run_command("ip", "link", "del", self.bridge, check=False)


def stale_labs_on(bridge_address: str) -> list[str]:
    """Tags of lab bridges that hold this slot's address: a lab that died without cleaning up (the slot's lock is ours,
    so no running lab owns them), whose routes would take this lab's traffic."""
    lines = run_command("ip", "-o", "-4", "addr", "show", check=False).stdout.splitlines()
    return [fields[1][len(NAME_PREFIX) + 2:] for fields in (line.split() for line in lines)
            if len(fields) > 3 and fields[1].startswith(f"{NAME_PREFIX}br") and fields[3] == f"{bridge_address}/24"]


def remove_leftovers(tag: str = "", cgroup_root: Path = Path("/sys/fs/cgroup")) -> list[str]:
    """Delete the lab namespaces, bridges and cgroups an interrupted run left (those of one run's tag, or all);
    returns what was removed."""
    removed = []
    namespaces = run_command("ip", "netns", "list", check=False).stdout.split()
    prefix = f"{NAME_PREFIX}-{tag}-" if tag else f"{NAME_PREFIX}-"
    for namespace in [n for n in namespaces if n.startswith(prefix)]:
        _kill_namespace_processes(namespace)
        run_command("ip", "netns", "del", namespace, check=False)
        removed.append(f"namespace {namespace}")
    links = run_command("ip", "-o", "link", "show", "type", "bridge", check=False).stdout.splitlines()
    bridge_mark = f" {NAME_PREFIX}br{tag}:" if tag else f" {NAME_PREFIX}br"
    for bridge in [line.split(":")[1].strip() for line in links if bridge_mark in line]:
        run_command("ip", "link", "del", bridge, check=False)
        removed.append(f"bridge {bridge}")
    hierarchies = [cgroup_root, *(d for d in cgroup_root.iterdir() if d.is_dir() and not d.is_symlink())]
    for top in [h / CGROUP_TOP / tag if tag else h / CGROUP_TOP for h in hierarchies]:
        if not top.is_dir():
            continue
        for group in sorted(top.rglob("*"), key=lambda p: -len(p.parts)):
            if group.is_dir():
                _kill_cgroup_processes(group)
                _remove_directory(group)
        _remove_directory(top)
        if tag:
            _remove_directory(top.parent, shared=True)
        removed.append(f"cgroup {top}")
    return removed


def _kill_namespace_processes(namespace: str) -> None:
    pids = run_command("ip", "netns", "pids", namespace, check=False).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def _kill_cgroup_processes(group: Path) -> None:
    procs = group / "cgroup.procs"
    if procs.exists():
        for pid in procs.read_text().split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)


def _remove_directory(path: Path, shared: bool = False) -> None:
    """rmdir a cgroup; a shared parent that other hosts still use is left without a word."""
    if not path.exists():
        return
    try:
        path.rmdir()
    except OSError as error:
        if not (shared and error.errno in (errno.EBUSY, errno.ENOTEMPTY)):
            log.warning("cannot remove %s: %s", path, error)
