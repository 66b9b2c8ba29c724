"""IP, ICMP, TCP and UDP protocol counters from /proc/net/snmp (the network namespace's view)."""

from __future__ import annotations

from producers.collectors.base import Collector

PROTOCOLS = ("Ip", "Icmp", "Tcp", "Udp")
STATIC_FIELDS = frozenset({"Ip.Forwarding", "Ip.DefaultTTL", "Tcp.RtoAlgorithm", "Tcp.RtoMin", "Tcp.RtoMax",
                           "Tcp.MaxConn"})
GAUGE_FIELDS = frozenset({"Tcp.CurrEstab"})
# Faults rather than traffic: retransmissions, errors, resets, failures (paper §6, packet loss).
EVENT_FIELDS = frozenset({"Tcp.RetransSegs", "Tcp.InErrs", "Tcp.OutRsts", "Tcp.AttemptFails", "Tcp.EstabResets",
                          "Tcp.InCsumErrors", "Udp.NoPorts", "Udp.InErrors", "Udp.RcvbufErrors", "Udp.SndbufErrors",
                          "Udp.InCsumErrors", "Ip.InHdrErrors", "Ip.InAddrErrors", "Ip.InDiscards",
                          "Ip.OutDiscards", "Icmp.InErrors", "Icmp.OutErrors"})


class SnmpCollector(Collector):
    """Protocol counters; each protocol is a header line of names followed by a line of values."""

    source = "/proc/net/snmp"

    def collect(self) -> dict[str, float]:
        out: dict[str, float] = {}
        lines = self._read_lines("net/snmp")
        for header, values in zip(lines[::2], lines[1::2]):
            try:
                self._parse_pair(out, header, values)
            except (ValueError, IndexError) as error:
                self._skip_line(self.source, values, error)
        return out

    def _parse_pair(self, out: dict[str, float], header: str, values: str) -> None:
        names, numbers = header.split(), values.split()
        protocol = names[0].rstrip(":")
        if numbers[0] != names[0]:
            raise ValueError(f"header {names[0]!r} is followed by {numbers[0]!r}")
        if protocol not in PROTOCOLS:
            return
        if len(names) != len(numbers):
            raise ValueError(f"{len(names) - 1} names but {len(numbers) - 1} values")
        for name, number in zip(names[1:], numbers[1:]):
            field = f"{protocol}.{name}"
            self._put(out, f"snmp.{field}", "", float(number), "network", _kind(field), "")


def _kind(field: str) -> str:
    if field in STATIC_FIELDS:
        return "static"
    if field in GAUGE_FIELDS:
        return "gauge"
    return "event" if field in EVENT_FIELDS else "counter"
