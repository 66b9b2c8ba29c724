"""A host's network configuration (MTU, transmit queue length, socket buffer limits, TCP congestion control) as
static channels: hosts of one cluster are compared on them to find a configuration that differs."""

from __future__ import annotations

import fcntl
import socket
import struct
from pathlib import Path
from typing import Callable, TypeVar

from producers.collectors.base import Collector
from producers.collectors.namespace_thread import NamespaceReader

T = TypeVar("T")

SIOCGIFMTU = 0x8921
SIOCGIFTXQLEN = 0x8942
INTERFACE_REQUESTS = {"mtu": SIOCGIFMTU, "tx_queue_len": SIOCGIFTXQLEN}
INTERFACE_UNITS = {"mtu": "bytes", "tx_queue_len": "packets"}
# struct ifreq on 64-bit Linux: the interface name in 16 bytes, then a 24-byte union whose first int is the answer.
IFREQ = struct.Struct("16si20x")
# Each sysctl file under net/ and the channels its numbers give, by position (tcp_rmem is "min default max").
BUFFER_SYSCTLS = {
    "ipv4/tcp_rmem": {1: "net.tcp_rmem_default", 2: "net.tcp_rmem_max"},
    "ipv4/tcp_wmem": {1: "net.tcp_wmem_default", 2: "net.tcp_wmem_max"},
    "core/rmem_max": {0: "net.core_rmem_max"},
    "core/wmem_max": {0: "net.core_wmem_max"},
}
CONGESTION_CONTROL = "ipv4/tcp_congestion_control"
AVAILABLE_CONGESTION_CONTROL = "ipv4/tcp_available_congestion_control"


class NetSettingsCollector(Collector):
    """net.mtu.<iface>, net.tx_queue_len.<iface>, socket buffer defaults and limits, and net.tcp_congestion.<algorithm>
    (1 for the one in use, 0 for every other the kernel offers, so hosts of one kernel share the channel names).

    Given /proc/PID (it has ns/net), everything is read on a thread that has entered that process's network
    namespace: /proc/sys/net and sysfs show the reader's namespace, whatever PID they are reached through. A file
    that is missing or malformed costs only its own channels.
    """

    source = "/proc/sys/net, /sys/class/net"
    default_interval_s = 5.0  # settings change rarely

    def __init__(self, procfs="/proc", sysfs="/sys"):
        super().__init__(procfs, sysfs)
        self._reader = NamespaceReader(self.procfs, "net-settings", NamespaceView.opened_here,
                                       lambda: HostView(self.procfs, self.sysfs))

    def collect(self) -> dict[str, float]:
        values = self._reader.run(self._read_settings)
        if not values:
            raise OSError(f"{self.source}: no network setting is readable for {self.procfs}")
        return values

    def close(self) -> None:
        self._reader.close()

    def _read_settings(self, view: HostView | NamespaceView) -> dict[str, float]:
        values: dict[str, float] = {}
        self._read_interfaces(view, values)
        self._read_buffer_limits(view, values)
        self._read_congestion_control(view, values)
        return values

    def _read_interfaces(self, view: HostView | NamespaceView, values: dict[str, float]) -> None:
        """MTU and transmit queue length of every interface but loopback; a vanished interface costs its own."""
        for interface in self._readable("net/dev", lambda: network_interfaces(self.procfs / "net/dev")) or ():
            for attribute, unit in INTERFACE_UNITS.items():
                setting = self._readable(f"{interface}/{attribute}",
                                         lambda: view.interface_setting(interface, attribute))
                if setting is not None:
                    self._put(values, f"net.{attribute}", interface, float(setting), "network", "static", unit)

    def _read_buffer_limits(self, view: HostView | NamespaceView, values: dict[str, float]) -> None:
        """The socket buffer defaults and limits, each sysctl file on its own."""
        for relative, names in BUFFER_SYSCTLS.items():
            numbers = self._readable(relative, lambda: numbers_at(view.sysctl(relative), names))
            for name, number in (numbers or {}).items():
                self._put(values, name, "", number, "network", "static", "bytes")

    def _read_congestion_control(self, view: HostView | NamespaceView, values: dict[str, float]) -> None:
        """1 for the algorithm in use and 0 for the others offered; none at all when the one in use is unknown."""
        current = self._readable(CONGESTION_CONTROL, lambda: only_word(view.sysctl(CONGESTION_CONTROL)))
        if current is None:
            return
        offered = self._readable(AVAILABLE_CONGESTION_CONTROL,
                                 lambda: view.sysctl(AVAILABLE_CONGESTION_CONTROL).split())
        for algorithm in sorted(set(offered or ()) | {current}):
            self._put(values, f"net.tcp_congestion.{algorithm}", "", float(algorithm == current), "network", "static",
                      "flag")

    def _readable(self, what: str, read: Callable[[], T]) -> T | None:
        """What one read gives, or None when its file is missing or malformed (reported once)."""
        try:
            return read()
        except (OSError, ValueError) as error:
            self._warn_once(what, "%s: cannot read %s (%s); its channels are left out", self.source, what, error)
            return None


class HostView:
    """The reader's own network namespace, or a captured tree: sysctls under <procfs>/sys/net, interface
    attributes under <sysfs>/class/net."""

    def __init__(self, procfs: Path, sysfs: Path):
        self.sysctls = procfs / "sys/net"
        self.interfaces = sysfs / "class/net"

    def sysctl(self, relative: str) -> str:
        return (self.sysctls / relative).read_text()

    def interface_setting(self, interface: str, attribute: str) -> int:
        return int((self.interfaces / interface / attribute).read_text())

    def close(self) -> None:
        """Nothing is held open."""


class NamespaceView:
    """Another process's network namespace, seen from the thread that has entered it: /proc/sys/net follows the
    calling thread's namespace, and a socket made on that thread answers for the namespace's interfaces (sysfs
    shows the namespace it was mounted in, so it cannot)."""

    def __init__(self, interface_socket: socket.socket):
        self._socket = interface_socket

    @classmethod
    def opened_here(cls) -> NamespaceView:
        """A view of the calling thread's namespace, with its socket made now."""
        return cls(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))

    def sysctl(self, relative: str) -> str:
        return (Path("/proc/sys/net") / relative).read_text()

    def interface_setting(self, interface: str, attribute: str) -> int:
        request = IFREQ.pack(interface.encode(), 0)
        return IFREQ.unpack(fcntl.ioctl(self._socket, INTERFACE_REQUESTS[attribute], request))[1]

    def close(self) -> None:
        self._socket.close()


def network_interfaces(net_dev: Path) -> list[str]:
    """The interfaces /proc/net/dev lists below its two header lines, loopback left out."""
    lines = net_dev.read_text().splitlines()[2:]
    names = [line.partition(":")[0].strip() for line in lines if ":" in line]
    return [name for name in names if name != "lo"]


def numbers_at(text: str, names: dict[int, str]) -> dict[str, float]:
    """Channel name → the number at its position in a sysctl's text; ValueError when one is missing or malformed.

    >>> numbers_at("4096\\t131072\\t6291456\\n", {1: "net.tcp_rmem_default", 2: "net.tcp_rmem_max"})
    {'net.tcp_rmem_default': 131072.0, 'net.tcp_rmem_max': 6291456.0}
    """
    words = text.split()
    if len(words) <= max(names):
        raise ValueError(f"expected at least {max(names) + 1} numbers, found {len(words)}")
    return {name: float(words[position]) for position, name in names.items()}


def only_word(text: str) -> str:
    """The one word of a sysctl file; ValueError when it holds none or several.

    >>> only_word("bbr\\n")
    'bbr'
    """
    words = text.split()
    if len(words) != 1:
        raise ValueError(f"expected one word, found {len(words)}")
    return words[0]
