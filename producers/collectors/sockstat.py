"""Socket counts and memory of the network namespace from /proc/net/sockstat."""

from __future__ import annotations

from producers.collectors.base import Field, ProcTextCollector


class SockStatCollector(ProcTextCollector):
    """Lines like 'TCP: inuse 5 orphan 0 tw 2 alloc 7 mem 1': name–value pairs after the protocol, all gauges."""

    source = "/proc/net/sockstat"
    relative = "net/sockstat"
    default_interval_s = 1.0

    def line_fields(self, number, tokens):
        protocol = tokens[0].rstrip(b":").decode().lower()
        if len(tokens) % 2 == 0 or not tokens[0].endswith(b":"):
            raise ValueError("expected 'PROTO: name value [name value …]'")
        return [Field(number, i + 1, f"sock.{protocol}_{tokens[i].decode()}", "", "network", "gauge",
                      "pages" if tokens[i] == b"mem" else "sockets")
                for i in range(1, len(tokens), 2)]

    def scan_plan(self) -> None:
        """Read by the agent rather than by the compiled scanner, just before Reveal's own sockets are
        (producers/collectors/own_footprint.py): the host's counts and Reveal's share of them are of one instant."""
        return None
