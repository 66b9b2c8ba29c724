"""Faults the lab injects into one emulated host, each with the subsystem it hits, a magnitude in its own unit, and a
measurement of what it really did.

A fault is started and stopped by the lab at scheduled times; `start` returns once the fault is in force, so the
times the lab records around it are the ground truth. `stop` lifts it and returns its `FaultEffect`: the counters
that prove it took effect (packets dropped, segments retransmitted, CPU taken, periods throttled, bytes written, …)
and whether they show the effect at all, so a fault that did nothing is not scored as missed.

Packet loss drops frames in flight on the bridge (nftables `numgen random` on the forward path; tc netem is not
available everywhere), the bandwidth cap is tc's token bucket, and the rest are processes or limits in the host's
cgroup.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from reveal.lab.hosts import LabHost, run_command, stop_all

NFT_TABLE_PREFIX = "reveal_loss_"
PYTHON = sys.executable
DROP_SAMPLE_S = 0.5
CLOCK_TICKS_PER_S = 100


@dataclass(frozen=True)
class FaultSpec:
    """What a scenario asks for: a fault kind on a host, when (seconds into the run), how long and how hard."""

    kind: str
    host: str
    start_s: float
    duration_s: float
    magnitude: float


@dataclass(frozen=True)
class FaultEffect:
    """What a fault measurably did while it was in force: named counters, whether they show the fault took effect,
    and for packet loss the cumulative drops over time ([ns since the epoch, packets dropped so far], …)."""

    took_effect: bool
    measured: dict = field(default_factory=dict)
    drops_timeline: tuple = ()


class Fault(ABC):
    """One fault on one host; `start` and `stop` may each be called once."""

    subsystem = "cpu"
    unit = ""

    def __init__(self, spec: FaultSpec, hosts: dict[str, LabHost], work_dir: Path):
        self.spec, self.host, self.hosts, self.work_dir = spec, hosts[spec.host], hosts, work_dir
        self._processes = []
        self._started = 0.0

    def start(self) -> None:
        """Put the fault in force, noting the counters its effect is measured against."""
        self._before = self._counters()
        self._started = time.monotonic()
        self._begin()

    def stop(self) -> FaultEffect:
        """Lift the fault and measure what it did."""
        seconds = max(time.monotonic() - self._started, 1e-3)
        effect = self._effect(self._counters_at_stop(), seconds)
        self._end()
        stop_all(self._processes)
        self._processes.clear()
        return effect

    @abstractmethod
    def _begin(self) -> None:
        """Put the fault in force."""

    def _end(self) -> None:
        """Undo the fault's settings (its processes are stopped for it)."""

    def _counters(self) -> dict[str, float]:
        """The counters the fault's effect is measured by, read now."""
        return {}

    def _counters_at_stop(self) -> dict[str, float]:
        return self._counters()

    @abstractmethod
    def _effect(self, after: dict[str, float], seconds: float) -> FaultEffect:
        """What the fault did, from the counters at its start (self._before) and at its end."""

    def _growth(self, after: dict[str, float]) -> dict[str, float]:
        return {name: after[name] - self._before.get(name, 0.0) for name in after}

    def describe(self) -> str:
        return f"{self.spec.kind} of {self.spec.magnitude:g} {self.unit} on {self.spec.host}".replace("  ", " ")

    def _spawn_python(self, code: str) -> subprocess.Popen:
        process = self.host.spawn([PYTHON, "-c", code])
        self._processes.append(process)
        return process


def tcp_counters(host: LabHost) -> dict[str, float]:
    """The host's TCP counters of /proc/net/snmp (RetransSegs, OutSegs, …), from its own namespace."""
    lines = [line.split() for line in Path(f"{host.net_procfs}/net/snmp").read_text().splitlines()
             if line.startswith("Tcp:")]
    return {name: float(value) for name, value in zip(lines[0][1:], lines[1][1:])}


def interface_counters(host: LabHost, interface: str = "eth0") -> dict[str, float]:
    """rx/tx packets and bytes of one of the host's interfaces, from /proc/net/dev in its namespace."""
    for line in Path(f"{host.net_procfs}/net/dev").read_text().splitlines():
        name, _, values = line.partition(":")
        if name.strip() == interface:
            fields = values.split()
            return {"rx_bytes": float(fields[0]), "rx_packets": float(fields[1]), "tx_bytes": float(fields[8]),
                    "tx_packets": float(fields[9])}
    return {}


def process_cpu_s(process: subprocess.Popen) -> float:
    """User plus system CPU seconds a running process has used (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS_PER_S


class PacketLoss(Fault):
    """Drops a fraction (magnitude: 0.001 = 0.1 %) of the frames the host sends, in flight on the bridge, as a link
    with a failing transmit side does: the host's TCP sees the segments lost and retransmits them, so its
    retransmission counters carry the fault. The drops are sampled every half second for per-window truth."""

    subsystem, unit = "network", "of packets"

    @property
    def _table(self) -> str:
        return f"{NFT_TABLE_PREFIX}{self.host.veth}"

    def _begin(self) -> None:
        per_million = max(1, round(self.spec.magnitude * 1_000_000))
        rules = (f"table bridge {self._table} {{\n"
                 f"  chain forward {{ type filter hook forward priority 0; policy accept;\n"
                 f"    iifname \"{self.host.veth}\" numgen random mod 1000000 < {per_million} counter drop\n"
                 f"  }}\n}}\n")
        rules_file = self.work_dir / f"nft-{self.spec.host}.conf"
        rules_file.write_text(rules)
        run_command("nft", "-f", str(rules_file))
        self._timeline = [(time.time_ns(), 0)]
        self._sampling = threading.Event()
        self._sampler = threading.Thread(target=self._sample_drops, daemon=True)
        self._sampler.start()

    def _sample_drops(self) -> None:
        while not self._sampling.wait(DROP_SAMPLE_S):
            self._timeline.append((time.time_ns(), self.dropped()))

    def dropped(self) -> int:
        """Frames the rule has dropped so far."""
        listing = run_command("nft", "list", "table", "bridge", self._table, check=False).stdout
        found = re.search(r"counter packets (\d+)", listing)
        return int(found.group(1)) if found else 0

    def _counters(self) -> dict[str, float]:
        return {name: tcp_counters(self.host)[name] for name in ("RetransSegs", "OutSegs")}

    def _counters_at_stop(self) -> dict[str, float]:
        self._sampling.set()
        self._sampler.join()
        dropped = self.dropped()
        self._timeline.append((time.time_ns(), dropped))
        return {**self._counters(), "packets_dropped": float(dropped)}

    def _end(self) -> None:
        run_command("nft", "delete", "table", "bridge", self._table, check=False)

    def _effect(self, after: dict[str, float], seconds: float) -> FaultEffect:
        growth = self._growth(after)
        measured = {"packets_dropped": after["packets_dropped"], "retransmitted_segments": growth["RetransSegs"],
                    "sent_segments": growth["OutSegs"]}
        return FaultEffect(after["packets_dropped"] > 0 and growth["RetransSegs"] > 0, measured,
                           tuple(self._timeline))


class BandwidthCap(Fault):
    """Caps the host's egress at magnitude Mbit/s with a token bucket."""

    subsystem, unit = "network", "Mbit/s"

    def _begin(self) -> None:
        run_command("ip", "netns", "exec", self.host.namespace, "tc", "qdisc", "replace", "dev", "eth0", "root",
                    "tbf", "rate", f"{self.spec.magnitude:g}mbit", "burst", "64kb", "latency", "100ms")

    def _counters_at_stop(self) -> dict[str, float]:
        shown = run_command("ip", "netns", "exec", self.host.namespace, "tc", "-s", "qdisc", "show", "dev", "eth0",
                            check=False).stdout
        found = re.search(r"dropped (\d+), overlimits (\d+)", shown)
        dropped, overlimits = (int(found.group(1)), int(found.group(2))) if found else (0, 0)
        return {"overlimits": float(overlimits), "dropped": float(dropped),
                "tx_bytes": interface_counters(self.host).get("tx_bytes", 0.0)}

    def _counters(self) -> dict[str, float]:
        return {"tx_bytes": interface_counters(self.host).get("tx_bytes", 0.0)}

    def _end(self) -> None:
        run_command("ip", "netns", "exec", self.host.namespace, "tc", "qdisc", "del", "dev", "eth0", "root",
                    check=False)

    def _effect(self, after: dict[str, float], seconds: float) -> FaultEffect:
        measured = {"overlimits": after["overlimits"], "packets_dropped": after["dropped"],
                    "sent_mbit_per_s": self._growth(after)["tx_bytes"] * 8 / seconds / 1e6}
        return FaultEffect(after["overlimits"] > 0, measured)


class CpuContention(Fault):
    """Magnitude busy processes in the host's cgroup, competing with its workload for CPU."""

    unit = "busy processes"

    def _begin(self) -> None:
        for _ in range(max(1, round(self.spec.magnitude))):
            self._spawn_python("while True: pass")

    def _counters_at_stop(self) -> dict[str, float]:
        return {"cpu_s": sum(process_cpu_s(process) for process in self._processes)}

    def _effect(self, after: dict[str, float], seconds: float) -> FaultEffect:
        return FaultEffect(after["cpu_s"] >= 0.25 * seconds, {"cpu_seconds_taken": after["cpu_s"],
                                                             "cores_taken": after["cpu_s"] / seconds})


class Straggler(Fault):
    """Throttles the whole host to magnitude of one core (cgroup CPU quota), so the job waits for it."""

    unit = "of a core"
    PERIOD_US = 100_000

    def _begin(self) -> None:
        quota = max(1000, round(self.spec.magnitude * self.PERIOD_US))
        self.host.cgroup.write("cpu.max", f"{quota} {self.PERIOD_US}", "cpu.cfs_quota_us", str(quota))

    def _counters(self) -> dict[str, float]:
        stat = dict(line.split() for line in self.host.cgroup.read("cpu.stat", "cpu.stat").splitlines())
        throttled_s = float(stat.get("throttled_usec", 0)) / 1e6 or float(stat.get("throttled_time", 0)) / 1e9
        return {"nr_throttled": float(stat.get("nr_throttled", 0)), "throttled_s": throttled_s}

    def _end(self) -> None:
        self.host.cgroup.write("cpu.max", f"max {self.PERIOD_US}", "cpu.cfs_quota_us", "-1")

    def _effect(self, after: dict[str, float], seconds: float) -> FaultEffect:
        growth = self._growth(after)
        return FaultEffect(growth["nr_throttled"] > 0, {"periods_throttled": growth["nr_throttled"],
                                                        "seconds_throttled": growth["throttled_s"]})


class MemoryReservation(Fault):
    """Allocates, touches and holds magnitude MiB on this host alone (the HugePages-reserved-on-one-host case)."""

    subsystem, unit = "memory", "MiB"

    def _begin(self) -> None:
        self._holder = self._spawn_python(f"import time, numpy; block = numpy.ones({int(self.spec.magnitude)} << 17); "
                                          "time.sleep(1e6)")

    def _counters_at_stop(self) -> dict[str, float]:
        try:
            status = Path(f"/proc/{self._holder.pid}/status").read_text()
        except OSError:
            return {"rss_mib": 0.0}
        found = re.search(r"VmRSS:\s+(\d+) kB", status)
        return {"rss_mib": int(found.group(1)) / 1024 if found else 0.0}

    def _effect(self, after: dict[str, float], seconds: float) -> FaultEffect:
        return FaultEffect(after["rss_mib"] >= 0.8 * self.spec.magnitude, {"resident_mib": after["rss_mib"]})


class MemoryPressure(Fault):
    """Caps the host's memory just above its use (memory.high, or v1's limit) while a reader streams magnitude MiB
    of file pages through it, so the kernel reclaims and faults pages in all along."""

    subsystem, unit = "memory", "MiB"

    def _begin(self) -> None:
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

    def _counters(self) -> dict[str, float]:
        if self.host.cgroup.unified:
            events = dict(line.split() for line in self.host.cgroup.read("memory.events", "").splitlines())
            return {"limit_hits": float(events.get("high", 0))}
        return {"limit_hits": float(self.host.cgroup.read("", "memory.failcnt"))}

    def _end(self) -> None:
        self.host.cgroup.write("memory.high", "max", "memory.limit_in_bytes", "-1")

    def _effect(self, after: dict[str, float], seconds: float) -> FaultEffect:
        hits = self._growth(after)["limit_hits"]
        return FaultEffect(hits > 0, {"memory_limit_hits": hits})


class StorageBurst(Fault):
    """Writes magnitude MiB/s in 1 MiB chunks with an fsync after each, from inside the host's cgroup; the bytes
    that reached the disk are read from the host's own I/O counters."""

    subsystem, unit = "storage", "MiB/s"

    def _begin(self) -> None:
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

    def _counters(self) -> dict[str, float]:
        return {"written_bytes": host_written_bytes(self.host)}

    def _effect(self, after: dict[str, float], seconds: float) -> FaultEffect:
        written = self._growth(after)["written_bytes"]
        asked = self.spec.magnitude * seconds * (1 << 20)
        return FaultEffect(written >= 0.5 * asked, {"bytes_written": written, "bytes_asked": asked})


def host_written_bytes(host: LabHost) -> float:
    """Bytes the host's cgroup has written to block devices (v2 io.stat wbytes, v1 blkio Write), summed."""
    if host.cgroup.unified:
        text = host.cgroup.read("io.stat", "")
        return float(sum(int(value) for value in re.findall(r"wbytes=(\d+)", text)))
    text = host.cgroup.read("", "blkio.throttle.io_service_bytes")
    return float(sum(int(value) for value in re.findall(r"^\S+ Write (\d+)$", text, flags=re.MULTILINE)))


class IrqPressure(Fault):
    """A flood of small UDP packets (magnitude packets/s) into this host from outside the lab's hosts (the bridge's
    own address), so the receiving host alone sees the softirq and NIC work."""

    subsystem, unit = "network", "packets/s"

    def _begin(self) -> None:
        code = ("import socket, time\n"
                "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                f"rate, target, sent, started = {float(self.spec.magnitude)}, ({self.host.address!r}, 9), 0, "
                "time.monotonic()\n"
                "while True:\n"
                "    try:\n"
                "        for _ in range(100): s.sendto(b'x' * 18, target)\n"
                "    except OSError:\n"
                "        time.sleep(0.01)\n"
                "    sent += 100\n"
                "    ahead = sent / rate - (time.monotonic() - started)\n"
                "    if ahead > 0: time.sleep(ahead)\n")
        self._processes.append(subprocess.Popen([PYTHON, "-c", code], start_new_session=True,
                                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    def _counters(self) -> dict[str, float]:
        return {"rx_packets": interface_counters(self.host).get("rx_packets", 0.0)}

    def _effect(self, after: dict[str, float], seconds: float) -> FaultEffect:
        received = self._growth(after)["rx_packets"]
        return FaultEffect(received >= 0.5 * self.spec.magnitude * seconds,
                           {"packets_received": received, "packets_per_s": received / seconds})


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
