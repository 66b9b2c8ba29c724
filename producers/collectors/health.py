"""The agent's own health as channels: how late its ticks run, what it costs, what its publisher holds, and how long
Reveal's own commands have run on the host (so that their load is not taken for the host's)."""

from __future__ import annotations

import resource
from pathlib import Path
from typing import Callable

from producers.collectors.base import Collector
from producers.fast_read.persistent_file import PersistentFile
from producers.own_commands import CommandLedger
from schemas.channels import AGENT_SUBSYSTEM, OWN_COMMANDS_SECONDS

_UNITS = {"agent.tick_lag_ms": ("gauge", "ms"), "agent.ticks_skipped": ("event", "ticks"),
          "agent.cpu_time_us": ("counter", "us"), "agent.rss_bytes": ("gauge", "bytes"),
          "agent.frames_sent": ("counter", "frames"), "agent.delivery_failures": ("event", "frames"),
          "agent.spool_records": ("gauge", "frames"), "agent.spool_bytes": ("gauge", "bytes"),
          "agent.dropped_frames": ("event", "frames"), OWN_COMMANDS_SECONDS: ("counter", "s")}


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


class OwnCommandsCollector(Collector):
    """Seconds Reveal's own commands (`reveal sql`, `report` …) have run on this host, read from their notes every
    tick (or after a block of ticks, standing for each): a command's load shows in the host's channels at once, and
    the engine must know of it as soon."""

    source = "reveal_commands"
    explains_load = True

    def __init__(self, ledger: CommandLedger | None = None, procfs: str = "/proc"):
        super().__init__(procfs)
        self.ledger = ledger if ledger is not None else CommandLedger(procfs=procfs)

    def collect(self) -> dict[str, float]:
        out: dict[str, float] = {}
        kind, unit = _UNITS[OWN_COMMANDS_SECONDS]
        self._put(out, OWN_COMMANDS_SECONDS, "", self.ledger.running_seconds(), AGENT_SUBSYSTEM, kind, unit)
        return out

    def close(self) -> None:
        self.ledger.close()
