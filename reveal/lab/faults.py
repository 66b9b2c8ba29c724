"""Faults the lab injects into one emulated host, each with the subsystem it hits, a magnitude in its own unit, and a
measurement of what it really did.

A fault is started and stopped by the lab at scheduled times, or from the start: before the workloads start, until
the run ends. `start` returns once the fault is in force, so the times the lab records around it are the ground
truth. `stop` lifts it and returns its `FaultEffect`: the counters that prove it took effect (packets dropped,
segments retransmitted, CPU taken, periods throttled, bytes written, …) and whether they show the effect at all, so
a fault that did nothing is not scored as missed.

Packet loss drops frames in flight on the bridge (nftables `numgen random` on the forward path; tc netem is not
available everywhere), the bandwidth cap is tc's token bucket and the IRQ flood comes from the bridge. Faults through
the host's cgroup are in cgroup_faults.py, configuration differences in setting_faults.py, and fault_kinds.py names
every kind.
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


@dataclass(frozen=True)
class FaultSpec:
    """What a scenario asks for: a fault kind on a host, when (seconds into the run), how long and how hard. A fault
    from the start holds for the whole run, baseline included; `setting` is a value that is not a number."""

    kind: str
    host: str
    start_s: float
    duration_s: float
    magnitude: float
    from_start: bool = False
    setting: str = ""


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
    takes_setting = False

    @classmethod
    def refusal(cls, magnitude: float, setting: str) -> str:
        """Why this kind cannot be asked for with these values, or "" when it can."""
        return ""

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
