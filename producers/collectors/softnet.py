"""Per-CPU packet processing from /proc/net/softnet_stat: processed, dropped and time-squeezed (hexadecimal)."""

from __future__ import annotations

from producers.collectors.base import Field, ProcTextCollector

# Columns present since Linux 2.6; flow_limit_count (column 10) since 3.11. Later columns vary by kernel.
_COLUMNS = {0: ("processed", "counter"), 1: ("dropped", "event"), 2: ("time_squeeze", "event"),
            9: ("received_rps", "counter"), 10: ("flow_limit_count", "event")}


class SoftnetCollector(ProcTextCollector):
    """One line per online CPU, in CPU order; backlog drops and squeezes reveal a CPU overwhelmed by packets."""

    source = "/proc/net/softnet_stat"
    relative = "net/softnet_stat"
    number_base = 16
    label_tokens = ()

    def line_fields(self, number, tokens):
        # Since Linux 5.10 column 12 holds the CPU id; before, lines are in CPU order with offline CPUs left out.
        cpu = int(tokens[12], 16) if len(tokens) >= 13 else number
        return [Field(number, column, f"net.softnet_{name}", f"cpu{cpu}", "network", kind, "packets")
                for column, (name, kind) in _COLUMNS.items() if column < len(tokens)]
