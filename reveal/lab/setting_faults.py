"""Configuration differences the lab gives one emulated host among peers that are otherwise alike: the MTU or the
transmit queue length of its eth0, the ceilings of its TCP buffers, or its TCP congestion control, each set in the
host's own network namespace. None of them is a load; what shows is that one host differs from the others, which a
host's own baseline cannot see and a comparison with its peers can.

Each notes the setting's previous value, restores it when lifted, and proves it took effect by reading the setting
back in the namespace while in force: the host has the value asked for and no other host has it. Each also names
the telemetry channels that show its setting, by the prefix the agent gives them.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from pathlib import Path

from reveal.lab.faults import Fault, FaultEffect
from reveal.lab.hosts import LabHost, run_command

AVAILABLE_CONGESTION_CONTROL = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
LARGEST_SYSCTL_INT = (1 << 31) - 1


def link_attribute(host: LabHost, name: str):
    """One attribute of the host's eth0 as `ip -j link show` gives it ("mtu", "txqlen", …)."""
    shown = run_command("ip", "-n", host.namespace, "-j", "link", "show", "eth0").stdout
    return json.loads(shown)[0][name]


def namespace_sysctl(host: LabHost, key: str) -> str:
    """A kernel setting as the host's network namespace sees it (fields of a vector separated by one space)."""
    return " ".join(run_command("ip", "netns", "exec", host.namespace, "sysctl", "-n", key).stdout.split())


def set_namespace_sysctl(host: LabHost, key: str, value: str) -> None:
    run_command("ip", "netns", "exec", host.namespace, "sysctl", "-w", f"{key}={value}")


def available_congestion_controls(path: Path = AVAILABLE_CONGESTION_CONTROL) -> tuple[str, ...]:
    """The TCP congestion control algorithms this kernel offers (none where it cannot say)."""
    try:
        return tuple(path.read_text().split())
    except OSError:
        return ()


class SettingFault(Fault):
    """One network setting of one host, changed while the fault is in force and restored after it; the magnitude is
    the new value, a whole number within `allowed`."""

    subsystem = "network"
    channel_prefixes: tuple[str, ...] = ()
    allowed = (0, LARGEST_SYSCTL_INT)

    @classmethod
    def refusal(cls, magnitude: float, setting: str) -> str:
        low, high = cls.allowed
        if not low <= magnitude <= high or magnitude != int(magnitude):
            return f"magnitude must be a whole number of {cls.unit} from {low} to {high}, got {magnitude:g}"
        return ""

    @property
    def asked(self):
        """The value the scenario asks for, as `read` gives it."""
        return int(self.spec.magnitude)

    @abstractmethod
    def read(self, host: LabHost):
        """The setting's value in the host's namespace now."""

    @abstractmethod
    def _write(self, host: LabHost, value) -> None:
        """Set the value in the host's namespace."""

    def _begin(self) -> None:
        self._previous = self.read(self.host)
        self._write(self.host, self.asked)

    def _end(self) -> None:
        self._write(self.host, self._previous)

    def _effect(self, after: dict[str, float], seconds: float) -> FaultEffect:
        """It took effect when the host reads back the value asked for and no peer has it (a host without peers:
        when it differs from the value before)."""
        value = self.read(self.host)
        peers = [self.read(host) for host in self.hosts.values() if host is not self.host] or [self._previous]
        measured = {"value": value, "peers_value": max(peers, key=peers.count), "previous": self._previous}
        return FaultEffect(value == self.asked and value not in peers, measured)

    def describe(self) -> str:
        asked = self.spec.setting or f"{self.spec.magnitude:.0f}"
        return f"{self.spec.kind} {asked} {self.unit} on {self.spec.host}".replace("  ", " ")


class LinkSetting(SettingFault):
    """A setting of the host's eth0: read as `ip -j link show` names it, set with `ip link set` under its option."""

    attribute = option = ""

    def read(self, host: LabHost) -> int:
        return link_attribute(host, self.attribute)

    def _write(self, host: LabHost, value: int) -> None:
        run_command("ip", "-n", host.namespace, "link", "set", "eth0", self.option, str(value))


class Mtu(LinkSetting):
    """The MTU of the host's eth0 (magnitude bytes), as when one machine's interface was left at another MTU."""

    unit, allowed, channel_prefixes = "bytes", (68, 65535), ("net.mtu.",)
    attribute = option = "mtu"


class TxQueueLen(LinkSetting):
    """The transmit queue length of the host's eth0 (magnitude packets)."""

    unit, allowed, channel_prefixes = "packets", (1, 1_000_000), ("net.tx_queue_len.",)
    attribute, option = "txqlen", "txqueuelen"


class TcpBuffers(SettingFault):
    """The largest TCP receive and send buffers of the host (the last field of tcp_rmem and tcp_wmem, both set to
    magnitude bytes); their minimum and default keep their values."""

    unit, allowed, channel_prefixes = "bytes", (4096, LARGEST_SYSCTL_INT), ("net.tcp_rmem", "net.tcp_wmem")
    KEYS = {"tcp_rmem": "net.ipv4.tcp_rmem", "tcp_wmem": "net.ipv4.tcp_wmem"}

    @property
    def asked(self) -> dict[str, int]:
        return {name: int(self.spec.magnitude) for name in self.KEYS}

    def read(self, host: LabHost) -> dict[str, int]:
        return {name: int(namespace_sysctl(host, key).split()[2]) for name, key in self.KEYS.items()}

    def _write(self, host: LabHost, value: dict[str, int]) -> None:
        for name, key in self.KEYS.items():
            low, default, _ = namespace_sysctl(host, key).split()
            set_namespace_sysctl(host, key, f"{low} {default} {value[name]}")


class CongestionControl(SettingFault):
    """The host's TCP congestion control algorithm, named by the fault's `setting` (e.g. "reno" among "bbr" peers);
    its magnitude is not used."""

    unit, channel_prefixes, takes_setting = "", ("net.tcp_congestion.",), True
    KEY = "net.ipv4.tcp_congestion_control"

    @classmethod
    def refusal(cls, magnitude: float, setting: str) -> str:
        available = ", ".join(available_congestion_controls())
        if not setting:
            return f"setting is required: the algorithm, one of this machine's congestion controls ({available})"
        if setting not in available_congestion_controls():
            return f"setting {setting!r} is not one of this machine's congestion controls ({available})"
        return ""

    @property
    def asked(self) -> str:
        return self.spec.setting

    def read(self, host: LabHost) -> str:
        return namespace_sysctl(host, self.KEY)

    def _write(self, host: LabHost, value: str) -> None:
        set_namespace_sysctl(host, self.KEY, value)


SETTING_FAULTS: dict[str, type[SettingFault]] = {
    "mtu": Mtu, "tx_queue_len": TxQueueLen, "tcp_buffers": TcpBuffers, "congestion_control": CongestionControl,
}
