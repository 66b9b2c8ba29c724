"""Per-interface receive and transmit counters from /proc/net/dev."""

from __future__ import annotations

from producers.collectors.base import Field, ProcTextCollector

FIELDS = ("rx_bytes", "rx_packets", "rx_errs", "rx_drop", "rx_fifo", "rx_frame", "rx_compressed", "rx_multicast",
          "tx_bytes", "tx_packets", "tx_errs", "tx_drop", "tx_fifo", "tx_colls", "tx_carrier", "tx_compressed")
# Rare-event counters get sums and bursts downstream rather than moments.
EVENT_FIELDS = frozenset({"rx_errs", "rx_drop", "rx_fifo", "rx_frame", "tx_errs", "tx_drop", "tx_fifo", "tx_colls",
                          "tx_carrier"})


class NetDevCollector(ProcTextCollector):
    """Cumulative counters per interface; the loopback interface is left out unless asked for."""

    source = "/proc/net/dev"
    relative = "net/dev"

    def __init__(self, procfs="/proc", sysfs="/sys", include_loopback: bool = False):
        super().__init__(procfs, sysfs)
        self.include_loopback = include_loopback

    def line_fields(self, number, tokens):
        if number < 2:
            return ()
        if not tokens[0].endswith(b":"):  # kernels since 2.6.24 print "name: counters"
            raise ValueError("expected 'interface: counters'")
        if len(tokens) - 1 != len(FIELDS):
            raise ValueError(f"expected {len(FIELDS)} counters, found {len(tokens) - 1}")
        name = tokens[0][:-1].decode()
        if name == "lo" and not self.include_loopback:
            return ()
        return [Field(number, i + 1, f"net.{field}", name, "network",
                      "event" if field in EVENT_FIELDS else "counter", "bytes" if field.endswith("bytes") else "packets")
                for i, field in enumerate(FIELDS)]
