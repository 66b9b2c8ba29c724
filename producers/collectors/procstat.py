"""Per-CPU time states, context switches, forks and run-queue counts from /proc/stat."""

from __future__ import annotations

from producers.collectors.base import Collector

# Field order of the cpu lines; kernels before 2.6.33 stop after steal or guest, so missing tail fields are skipped.
CPU_STATES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")
_HOST_COUNTERS = {"ctxt": ("cpu.context_switches", "switches"), "processes": ("cpu.forks", "forks"),
                  "intr": ("cpu.interrupts", "interrupts")}
_HOST_GAUGES = {"procs_running": "cpu.procs_running", "procs_blocked": "cpu.procs_blocked"}


class ProcStatCollector(Collector):
    """Cumulative CPU time per state and CPU (USER_HZ ticks); 'all' is the host-wide line."""

    source = "/proc/stat"

    def collect(self) -> dict[str, float]:
        return self._parse_lines("stat", self._parse_line)

    def _parse_line(self, out: dict[str, float], line: str) -> None:
        fields = line.split()
        if not fields:
            return
        key = fields[0]
        if key.startswith("cpu"):
            device = key[3:] and key or "all"
            values = [float(v) for v in fields[1:1 + len(CPU_STATES)]]
            for state, value in zip(CPU_STATES, values):
                self._put(out, f"cpu.{state}", device, value, "cpu", "counter", "ticks")
        elif key in _HOST_COUNTERS:
            metric, unit = _HOST_COUNTERS[key]
            self._put(out, metric, "", float(fields[1]), "cpu", "counter", unit)
        elif key in _HOST_GAUGES:
            self._put(out, _HOST_GAUGES[key], "", float(fields[1]), "cpu", "gauge", "tasks")
