"""What every collector shares: an injected root, and a memo of the channels it has reported."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from pathlib import Path

from schemas.records import Channel

log = logging.getLogger(__name__)


class Collector(ABC):
    """Reads one source. `collect()` returns channel name → value; `describe(name)` its catalog entry."""

    source = "base"

    def __init__(self, procfs: str | Path = "/proc", sysfs: str | Path = "/sys"):
        self.procfs = Path(procfs)
        self.sysfs = Path(sysfs)
        self._channels: dict[str, Channel] = {}
        self._warned: set[str] = set()

    @abstractmethod
    def collect(self) -> dict[str, float]:
        """Every channel this source has now, name → value; OSError when the source cannot be read at all."""

    def available(self) -> bool:
        """Whether this source can be read on this host; decided once when the agent starts."""
        try:
            self.collect()
        except OSError as error:
            log.warning("%s: source not readable (%s); its channels are left out", self.source, error)
            return False
        return True

    def describe(self, name: str) -> Channel:
        return self._channels[name]

    def _put(self, out: dict[str, float], metric: str, device: str, value: float,
             subsystem: str, kind: str, unit: str) -> None:
        """Record one reading, registering its channel the first time it is seen."""
        name = f"{metric}.{device}" if device else metric
        if name not in self._channels:
            self._channels[name] = Channel(name, subsystem, kind, unit, device)
        out[name] = value

    def _parse_lines(self, relative: str, parse_line, skip_header: int = 0) -> dict[str, float]:
        """Run parse_line(out, line) over a file's lines; a line it cannot parse is skipped, not fatal."""
        out: dict[str, float] = {}
        for line in self._read_lines(relative)[skip_header:]:
            try:
                parse_line(out, line)
            except (ValueError, IndexError) as error:
                self._skip_line(self.source, line, error)
        return out

    def _read_lines(self, relative: str) -> list[str]:
        with open(self.procfs / relative, "rb") as handle:
            return handle.read().decode("ascii", "replace").splitlines()

    def _skip_line(self, where: str, line: str, error: Exception) -> None:
        """A malformed line costs its own channels only; say so once per source and line shape."""
        key = f"{where}:{line[:24]}"
        if key not in self._warned:
            self._warned.add(key)
            log.warning("%s: skipped malformed line %r (%s)", where, line[:80], error)
