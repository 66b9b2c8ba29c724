"""Protocol counters of the network namespace: /proc/net/snmp (IP, ICMP, TCP, UDP) and /proc/net/netstat (the nstat
view: TcpExt and IpExt, paper Appendix A)."""

from __future__ import annotations

from producers.collectors.base import Field, ProcTextCollector

STATIC_FIELDS = frozenset({"Ip.Forwarding", "Ip.DefaultTTL", "Tcp.RtoAlgorithm", "Tcp.RtoMin", "Tcp.RtoMax",
                           "Tcp.MaxConn"})
GAUGE_FIELDS = frozenset({"Tcp.CurrEstab"})
# Faults rather than traffic: retransmissions, errors, resets, drops (paper §6, packet loss).
EVENT_FIELDS = frozenset({
    "Tcp.RetransSegs", "Tcp.InErrs", "Tcp.OutRsts", "Tcp.AttemptFails", "Tcp.EstabResets", "Tcp.InCsumErrors",
    "Udp.NoPorts", "Udp.InErrors", "Udp.RcvbufErrors", "Udp.SndbufErrors", "Udp.InCsumErrors", "Ip.InHdrErrors",
    "Ip.InAddrErrors", "Ip.InDiscards", "Ip.OutDiscards", "Icmp.InErrors", "Icmp.OutErrors",
    "TcpExt.TCPLostRetransmit", "TcpExt.TCPTimeouts", "TcpExt.TCPSynRetrans", "TcpExt.TCPRcvQDrop",
    "TcpExt.ListenDrops", "TcpExt.ListenOverflows", "TcpExt.TCPFastRetrans", "TcpExt.TCPSlowStartRetrans",
    "TcpExt.TCPRetransFail", "TcpExt.TCPBacklogDrop", "TcpExt.TCPZeroWindowDrop", "TcpExt.TCPOFODrop",
    "TcpExt.TCPAbortOnTimeout", "TcpExt.TCPAbortOnData", "TcpExt.TCPSpuriousRTOs", "TcpExt.TCPDSACKRecv",
    "TcpExt.PruneCalled", "TcpExt.TCPMemoryPressures", "IpExt.InNoRoutes", "IpExt.InCsumErrors"})


# IP, UDP and TCP traffic counters that count packets, datagrams or segments (a rate a link carries, not events):
# Ip.OutTransmits (Linux 6.3+) counts every packet IP sends, TcpExt.TCPDelivered the segments the peer has received
# and TcpExt.TCPOrigDataSent the data segments sent for the first time.
PACKET_FIELDS = frozenset({"InReceives", "InDelivers", "OutRequests", "OutTransmits", "TCPDelivered",
                           "TCPOrigDataSent", "ForwDatagrams", "InDatagrams",
                           "OutDatagrams", "InSegs", "OutSegs", "InMcastPkts", "OutMcastPkts", "InBcastPkts",
                           "OutBcastPkts", "InNoECTPkts", "InECT1Pkts", "InECT0Pkts", "InCEPkts"})


def _unit(field: str) -> str:
    """Octet counters (IpExt.InOctets, …) count bytes, traffic counters packets; the rest count events."""
    return "bytes" if field.endswith("Octets") else "packets" if field in PACKET_FIELDS else ""


def _kind(field: str) -> str:
    if field in STATIC_FIELDS:
        return "static"
    if field in GAUGE_FIELDS:
        return "gauge"
    return "event" if field in EVENT_FIELDS else "counter"


class ProtocolCountersCollector(ProcTextCollector):
    """Files made of pairs of lines: 'Proto: Name1 Name2 …' then 'Proto: value1 value2 …'."""

    protocols: frozenset[str] = frozenset()

    def fields(self, lines):
        for header_number in range(0, len(lines) - 1, 2):
            header, values = lines[header_number], lines[header_number + 1]
            try:
                yield from self._pair_fields(header_number + 1, header, values)
            except (ValueError, IndexError) as error:
                self._skip_line(values, error)

    def _pair_fields(self, number: int, header: list[bytes], values: list[bytes]) -> list[Field]:
        if not header or not values or header[0] != values[0]:
            raise ValueError(f"header {header[:1]} is followed by {values[:1]}")
        protocol = header[0].rstrip(b":").decode()
        if self.protocols and protocol not in self.protocols:
            return []
        if len(header) != len(values):
            raise ValueError(f"{len(header) - 1} names but {len(values) - 1} values")
        return [Field(number, i, f"snmp.{protocol}.{name.decode()}", "", "network",
                      _kind(f"{protocol}.{name.decode()}"), _unit(name.decode()))
                for i, name in enumerate(header[1:], start=1)]


class SnmpCollector(ProtocolCountersCollector):
    """IP, ICMP, TCP and UDP counters."""

    source = "/proc/net/snmp"
    relative = "net/snmp"
    protocols = frozenset({"Ip", "Icmp", "Tcp", "Udp"})


class NetstatCollector(ProtocolCountersCollector):
    """TCP and IP extended counters: TCPLostRetransmit, TCPTimeouts, TCPSynRetrans, TCPRcvQDrop, ListenDrops, …"""

    default_interval_s = 0.5

    source = "/proc/net/netstat"
    relative = "net/netstat"
    protocols = frozenset({"TcpExt", "IpExt"})
