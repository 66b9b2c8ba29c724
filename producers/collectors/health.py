"""The agent's own health as channels: how late its ticks run, what it costs and what its publisher holds."""

from __future__ import annotations

import resource
from pathlib import Path
from typing import Callable

from producers.collectors.base import Collector
from producers.fast_read.persistent_file import PersistentFile
from schemas.channels import AGENT_SUBSYSTEM

_UNITS = {"agent.tick_lag_ms": ("gauge", "ms"), "agent.ticks_skipped": ("event", "ticks"),
          "agent.cpu_time_us": ("counter", "us"), "agent.rss_bytes": ("gauge", "bytes"),
          "agent.frames_sent": ("counter", "frames"), "agent.delivery_failures": ("event", "frames"),
          "agent.spool_records": ("gauge", "frames"), "agent.spool_bytes": ("gauge", "bytes"),
          "agent.dropped_frames": ("event", "frames")}


def resident_bytes(statm: PersistentFile) -> float:
    """The agent's memory in use now (resident set, /proc/self/statm), not its high-water mark, which only rises."""
    try:
        return float(int(statm.read().split()[1]) * resource.getpagesize())
    except (OSError, IndexError, ValueError):
        return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


class AgentHealthCollector(Collector):
    """Reads the agent's counters through the callables it is given; one channel per known name."""

    source = "agent"
    default_interval_s = 1.0

    def __init__(self, *providers: Callable[[], dict[str, float]]):
        super().__init__()
        self.providers = providers
        self._statm = PersistentFile(Path("/proc/self/statm"))

    def collect(self) -> dict[str, float]:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        values = {"agent.cpu_time_us": (usage.ru_utime + usage.ru_stime) * 1e6,
                  "agent.rss_bytes": resident_bytes(self._statm)}
        for provider in self.providers:
            values.update(provider())
        out: dict[str, float] = {}
        for name, value in values.items():
            kind, unit = _UNITS.get(name, ("gauge", ""))
            self._put(out, name, "", float(value), AGENT_SUBSYSTEM, kind, unit)
        return out

    def close(self) -> None:
        self._statm.close()

