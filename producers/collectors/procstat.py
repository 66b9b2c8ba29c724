"""Per-CPU time states, context switches, forks and run-queue counts from /proc/stat."""

from __future__ import annotations

from producers.collectors.base import Field, ProcTextCollector

# Field order of the cpu lines; kernels before 2.6.33 stop after steal or guest, so missing tail fields are skipped.
CPU_STATES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")
_HOST_COUNTERS = {b"ctxt": ("cpu.context_switches", "switches"), b"processes": ("cpu.forks", "forks"),
                  b"intr": ("cpu.interrupts", "interrupts")}
_HOST_GAUGES = {b"procs_running": "cpu.procs_running", b"procs_blocked": "cpu.procs_blocked"}


class ProcStatCollector(ProcTextCollector):
    """Cumulative CPU time per state and CPU (USER_HZ ticks); 'all' is the host-wide line."""

    source = "/proc/stat"
    relative = "stat"

    def line_fields(self, number, tokens):
        key = tokens[0] if tokens else b""
        if key.startswith(b"cpu"):
            device = key[3:].decode() and key.decode() or "all"
            count = min(len(tokens) - 1, len(CPU_STATES))
            if count < 4:
                raise ValueError(f"a cpu line has {count} time fields, at least 4 expected")
            return [Field(number, 1 + i, f"cpu.{CPU_STATES[i]}", device, "cpu", "counter", "ticks")
                    for i in range(count)]
        if key in _HOST_COUNTERS:
            metric, unit = _HOST_COUNTERS[key]
            return [Field(number, 1, metric, "", "cpu", "counter", unit)]
        if key in _HOST_GAUGES:
            return [Field(number, 1, _HOST_GAUGES[key], "", "cpu", "gauge", "tasks")]
        return ()
