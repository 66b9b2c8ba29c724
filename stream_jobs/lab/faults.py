"""Faults the lab injects into one emulated host, each with the subsystem it hits and a magnitude in its own unit.

A fault is started and stopped by the lab at scheduled times; `start` returns once the fault is in force, so the
times the lab records around it are the ground truth. Packet loss uses nftables' `numgen random` (tc netem is not
available everywhere), the bandwidth cap tc's token bucket, and the rest processes or limits in the host's cgroup.
"""

from __future__ import annotations

import subprocess
import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from stream_jobs.lab.hosts import LabError, LabHost, run_command, stop_all

NFT_TABLE = "reveal_lab"
PYTHON = sys.executable


@dataclass(frozen=True)
class FaultSpec:
    """What a scenario asks for: a fault kind on a host, when (seconds into the run), how long and how hard."""

    kind: str
    host: str
    start_s: float
    duration_s: float
    magnitude: float


class Fault(ABC):
    """One fault on one host; `start` and `stop` may each be called once."""

    subsystem = "cpu"
    unit = ""

    def __init__(self, spec: FaultSpec, hosts: dict[str, LabHost], work_dir: Path):
        self.spec, self.host, self.hosts, self.work_dir = spec, hosts[spec.host], hosts, work_dir
        self._processes = []

    @abstractmethod
    def start(self) -> None:
        """Put the fault in force."""

    def stop(self) -> None:
        """Lift the fault: stop its processes; subclasses also undo their settings."""
        stop_all(self._processes)
        self._processes.clear()

    def describe(self) -> str:
        return f"{self.spec.kind} of {self.spec.magnitude:g} {self.unit} on {self.spec.host}".replace("  ", " ")

    def _spawn_python(self, code: str) -> None:
        self._processes.append(self.host.spawn([PYTHON, "-c", code]))


class PacketLoss(Fault):
    """Drops a fraction (magnitude: 0.001 = 0.1 %) of the packets the host sends, as a link with a failing transmit
    side does: the host's own TCP retransmits them, so its retransmission counters carry the fault."""

    subsystem, unit = "network", "of packets"

    def start(self) -> None:
        per_million = max(1, round(self.spec.magnitude * 1_000_000))
        rules = (f"table inet {NFT_TABLE} {{\n"
                 f"  chain output {{ type filter hook output priority 0; policy accept;\n"
                 f"    oifname \"eth0\" numgen random mod 1000000 < {per_million} drop\n  }}\n}}\n")
        rules_file = self.work_dir / f"nft-{self.spec.host}.conf"
        rules_file.write_text(rules)
        run_command("ip", "netns", "exec", self.host.namespace, "nft", "-f", str(rules_file))

    def stop(self) -> None:
        run_command("ip", "netns", "exec", self.host.namespace, "nft", "delete", "table", "inet", NFT_TABLE,
                    check=False)


class BandwidthCap(Fault):
    """Caps the host's egress at magnitude Mbit/s with a token bucket."""

    subsystem, unit = "network", "Mbit/s"

    def start(self) -> None:
        run_command("ip", "netns", "exec", self.host.namespace, "tc", "qdisc", "replace", "dev", "eth0", "root",
                    "tbf", "rate", f"{self.spec.magnitude:g}mbit", "burst", "64kb", "latency", "100ms")

    def stop(self) -> None:
        run_command("ip", "netns", "exec", self.host.namespace, "tc", "qdisc", "del", "dev", "eth0", "root",
                    check=False)


class CpuContention(Fault):
    """Magnitude busy processes in the host's cgroup, competing with its workload for CPU."""

    unit = "busy processes"

    def start(self) -> None:
        for _ in range(max(1, round(self.spec.magnitude))):
            self._spawn_python("while True: pass")


class Straggler(Fault):
    """Throttles the whole host to magnitude of one core (cgroup CPU quota), so the job waits for it."""

    unit = "of a core"
    PERIOD_US = 100_000

    def start(self) -> None:
        quota = max(1000, round(self.spec.magnitude * self.PERIOD_US))
        self.host.cgroup.write("cpu.max", f"{quota} {self.PERIOD_US}", "cpu.cfs_quota_us", str(quota))

    def stop(self) -> None:
        self.host.cgroup.write("cpu.max", f"max {self.PERIOD_US}", "cpu.cfs_quota_us", "-1")


class MemoryReservation(Fault):
    """Allocates, touches and holds magnitude MiB on this host alone (the HugePages-reserved-on-one-host case)."""

    subsystem, unit = "memory", "MiB"

    def start(self) -> None:
        self._spawn_python(f"import time, numpy; block = numpy.ones({int(self.spec.magnitude)} << 17); "
                           "time.sleep(1e6)")


class MemoryPressure(Fault):
    """Caps the host's memory just above its use (memory.high, or v1's limit) while a reader streams magnitude MiB
    of file pages through it, so the kernel reclaims and faults pages in all along."""

    subsystem, unit = "memory", "MiB"

    def start(self) -> None:
        used = int(self.host.cgroup.read("memory.current", "memory.usage_in_bytes"))
        self._limit = used + (32 << 20)
        self.host.cgroup.write("memory.high", str(self._limit), "memory.limit_in_bytes", str(self._limit))
        data = self.work_dir / f"pressure-{self.spec.host}.bin"
        size = int(self.spec.magnitude) << 20
        self._spawn_python(
            f"import os, time\npath = {str(data)!r}\n"
            f"with open(path, 'wb') as f: f.truncate({size})\n"
            "while True:\n"
            "    with open(path, 'rb') as f:\n"
            "        while f.read(1 << 20): pass\n"
            "    time.sleep(0.05)\n")

    def stop(self) -> None:
        super().stop()
        self.host.cgroup.write("memory.high", "max", "memory.limit_in_bytes", "-1")


class StorageBurst(Fault):
    """Writes magnitude MiB/s in 1 MiB chunks with an fsync after each, from inside the host's cgroup."""

    subsystem, unit = "storage", "MiB/s"

    def start(self) -> None:
        path = self.work_dir / f"burst-{self.spec.host}.bin"
        self._spawn_python(
            "import os, time\n"
            f"fd = os.open({str(path)!r}, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)\n"
            "chunk, written = os.urandom(1 << 20), 0\n"
            f"rate, started = {float(self.spec.magnitude)}, time.monotonic()\n"
            "while True:\n"
            "    os.pwrite(fd, chunk, (written % 64) << 20); os.fsync(fd); written += 1\n"
            "    ahead = written / rate - (time.monotonic() - started)\n"
            "    if ahead > 0: time.sleep(ahead)\n")


class IrqPressure(Fault):
    """A flood of small UDP packets (magnitude packets/s) into this host from outside the lab's hosts (the bridge's
    own address), so the receiving host alone sees the softirq and NIC work."""

    subsystem, unit = "network", "packets/s"

    def start(self) -> None:
        code = ("import socket, time\n"
                "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                f"rate, target, sent, started = {float(self.spec.magnitude)}, ({self.host.address!r}, 9), 0, "
                "time.monotonic()\n"
                "while True:\n"
                "    for _ in range(100): s.sendto(b'x' * 18, target)\n"
                "    sent += 100\n"
                "    ahead = sent / rate - (time.monotonic() - started)\n"
                "    if ahead > 0: time.sleep(ahead)\n")
        self._processes.append(subprocess.Popen([PYTHON, "-c", code], start_new_session=True,
                                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))


FAULTS: dict[str, type[Fault]] = {
    "packet_loss": PacketLoss, "bandwidth_cap": BandwidthCap, "cpu_contention": CpuContention,
    "straggler": Straggler, "memory_pressure": MemoryPressure, "memory_reservation": MemoryReservation,
    "storage_burst": StorageBurst, "irq_pressure": IrqPressure,
}


def make_fault(spec: FaultSpec, hosts: dict[str, LabHost], work_dir: Path) -> Fault:
    """The fault a spec names; ValueError names an unknown kind or host and the allowed ones."""
    if spec.kind not in FAULTS:
        raise ValueError(f"fault kind {spec.kind!r} is not one of {', '.join(FAULTS)}")
    if spec.host not in hosts:
        raise ValueError(f"fault {spec.kind} names host {spec.host!r}; the hosts are {', '.join(hosts)}")
    return FAULTS[spec.kind](spec, hosts, work_dir)
