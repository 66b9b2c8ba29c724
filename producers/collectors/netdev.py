"""Per-interface receive and transmit counters from /proc/net/dev."""

from __future__ import annotations

from producers.collectors.base import Collector

FIELDS = ("rx_bytes", "rx_packets", "rx_errs", "rx_drop", "rx_fifo", "rx_frame", "rx_compressed", "rx_multicast",
          "tx_bytes", "tx_packets", "tx_errs", "tx_drop", "tx_fifo", "tx_colls", "tx_carrier", "tx_compressed")
# Rare-event counters get sums and bursts downstream rather than moments.
EVENT_FIELDS = frozenset({"rx_errs", "rx_drop", "rx_fifo", "rx_frame", "tx_errs", "tx_drop", "tx_fifo", "tx_colls",
                          "tx_carrier"})


class NetDevCollector(Collector):
    """Cumulative counters per interface; the loopback interface is left out unless asked for."""

    source = "/proc/net/dev"

    def __init__(self, procfs="/proc", sysfs="/sys", include_loopback: bool = False):
        super().__init__(procfs, sysfs)
        self.include_loopback = include_loopback

    def collect(self) -> dict[str, float]:
        return self._parse_lines("net/dev", self._parse_line, skip_header=2)

    def _parse_line(self, out: dict[str, float], line: str) -> None:
        interface, _, rest = line.partition(":")
        interface = interface.strip()
        values = rest.split()
        if len(values) != len(FIELDS):
            raise ValueError(f"expected {len(FIELDS)} counters, found {len(values)}")
        if interface == "lo" and not self.include_loopback:
            return
        for field, value in zip(FIELDS, values):
            kind = "event" if field in EVENT_FIELDS else "counter"
            unit = "bytes" if field.endswith("bytes") else "packets"
            self._put(out, f"net.{field}", interface, float(value), "network", kind, unit)
