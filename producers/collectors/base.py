"""What every collector shares: an injected root, a memo of the channels it reports, and a read that reuses layouts.

A collector's `read()` returns a Reading: the channel names, in an order that stays the same (the very same tuple)
while the source's layout is unchanged, and their values. The registry uses the tuple's identity to place values
into the frame without looking names up on every tick.
"""

from __future__ import annotations

import logging
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

from producers.fast_read.persistent_file import PersistentFile
from producers.fast_read.scanned_layout import ScannedLayout, scanner_available
from producers.fast_read.token_layout import TokenLayout, finite_or_nan
from schemas.agent_records import Channel

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reading:
    """One instant of one source: channel names and their values, aligned."""

    names: tuple[str, ...]
    values: list[float] | np.ndarray


class Collector(ABC):
    """Reads one source. `collect()` returns channel name → value; `describe(name)` its catalog entry."""

    source = "base"
    # How often the source is read by default; 0 means every tick. Slow-moving or costly sources read less often.
    default_interval_s = 0.0
    # Whether its channels explain load that other channels show (Reveal's own commands): where many ticks are read
    # at once, it is read after them and its reading stands for each, so the explanation never comes after the load.
    explains_load = False

    def __init__(self, procfs: str | Path = "/proc", sysfs: str | Path = "/sys"):
        self.procfs = Path(procfs)
        self.sysfs = Path(sysfs)
        self._channels: dict[str, Channel] = {}
        self._warned: set[str] = set()
        self._names: tuple[str, ...] = ()

    @abstractmethod
    def collect(self) -> dict[str, float]:
        """Every channel this source has now, name → value; OSError when the source cannot be read at all."""

    def read(self) -> Reading:
        """The current values, with the same names tuple as last time when the channel list has not changed."""
        values = self.collect()
        names = tuple(values)
        if names != self._names:
            self._names = names
        return Reading(self._names, list(values.values()))

    def available(self) -> bool:
        """Whether this source can be read on this host; decided once when the agent starts."""
        try:
            self.read()
        except OSError as error:
            log.warning("%s: source not readable (%s); its channels are left out", self.source, error)
            return False
        return True

    def describe(self, name: str) -> Channel:
        return self._channels[name]

    def scan_plan(self) -> tuple[ScannedLayout, int] | None:
        """The scanned layout and open descriptor a batch can read this source with; None: the collector reads it."""
        return None

    def files(self) -> tuple[Path, ...]:
        """The kernel files one read goes through, where the source is files (for measuring the kernel's share)."""
        return ()

    def close(self) -> None:
        """Release open files; the collector is not used afterwards."""

    def _register(self, metric: str, device: str, subsystem: str, kind: str, unit: str) -> str:
        """The channel name for a metric on a device, registering its catalog entry the first time."""
        name = f"{metric}.{device}" if device else metric
        if name not in self._channels:
            self._channels[name] = Channel(name, subsystem, kind, unit, device)
        return name

    def _put(self, out: dict[str, float], metric: str, device: str, value: float,
             subsystem: str, kind: str, unit: str) -> None:
        """Record one reading, registering its channel the first time it is seen."""
        out[self._register(metric, device, subsystem, kind, unit)] = value

    def _warn_once(self, key: str, message: str, *args) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message, *args)


@dataclass(frozen=True)
class Field:
    """Where one channel's value sits in a text source: line number, token number within the line, and scale."""

    line: int
    token: int
    metric: str
    device: str
    subsystem: str
    kind: str
    unit: str = ""
    scale: float = 1.0


def _as_list(values) -> list[float]:
    return values.tolist() if isinstance(values, np.ndarray) else list(values)


class ProcTextCollector(Collector):
    """A collector of one whitespace-separated text file under procfs (or sysfs).

    Subclasses describe the file once in `fields(lines)`; afterwards each read splits the file and picks values by
    position while the labels are where they were. When the layout changes (a new interface, a hot-plugged CPU) or a
    value is malformed, the file is parsed afresh, and a malformed line then costs only its own channels.
    """

    relative = ""
    # Token positions within a contributing line that must stay the same for the cached layout to hold.
    label_tokens: tuple[int, ...] = (0,)
    number_base = 10

    def __init__(self, procfs="/proc", sysfs="/sys"):
        super().__init__(procfs, sysfs)
        self._file = PersistentFile(self._path())
        self._layout: TokenLayout | None = None
        self._scanned: ScannedLayout | None = None

    def _path(self) -> Path:
        return self.procfs / self.relative

    def fields(self, lines: list[list[bytes]]) -> Iterable[Field]:
        """Every value of the file, line by line; a line that cannot be understood is skipped and reported once."""
        for number, tokens in enumerate(lines):
            try:
                yield from list(self.line_fields(number, tokens))
            except (ValueError, IndexError) as error:
                self._skip_line(tokens, error)

    def line_fields(self, number: int, tokens: list[bytes]) -> Iterable[Field]:
        """The values on one line; raise ValueError or IndexError when the line is not as expected."""
        return ()

    def _skip_line(self, tokens: list[bytes], error: Exception) -> None:
        raw = b" ".join(tokens)[:80]
        self._warn_once(f"line:{raw[:24]!r}", "%s: skipped malformed line %r (%s)", self.source, raw, error)

    def read(self) -> Reading:
        scanned = self._scanned
        data = None
        if scanned is not None:
            values = scanned.values(self._file.fileno())
            if values is not None:
                return Reading(scanned.names, values)
            data = scanned.text()
            if data is None:  # the file outgrew the scanner's buffer
                self._scanned = None
        if data is None:
            data = self._file.read()
        reading = self._parse(data)
        if self._scanned is None and self._layout is not None and scanner_available():
            self._scanned = ScannedLayout(self._layout, data, self._file.size)
        return reading

    def scan_plan(self) -> tuple[ScannedLayout, int] | None:
        """The scanned layout and open descriptor a batch can read this source with, while one holds; None for a
        subclass that reworks the values after reading (it reads on its own)."""
        if self._scanned is None or type(self).read is not ProcTextCollector.read:
            return None
        return self._scanned, self._file.fileno()

    def _parse(self, data: bytes) -> Reading:
        """The values of the file's text by the cached layout, or by a layout learnt afresh when it no longer fits."""
        tokens = data.split()
        layout = self._layout
        if layout is not None and layout.matches(tokens):
            try:
                return Reading(layout.names, layout.values(tokens))
            except ValueError:
                pass  # a malformed value: parse the file afresh below, which skips that line alone
        layout = self._build_layout(data)
        self._layout = layout if layout.names else None  # an empty layout would match any file of that size
        self._scanned = None
        return Reading(layout.names, layout.values(tokens))

    def collect(self) -> dict[str, float]:
        reading = self.read()
        return dict(zip(reading.names, _as_list(reading.values)))

    def files(self) -> tuple[Path, ...]:
        return (self._file.path,)

    def close(self) -> None:
        self._file.close()

    def _build_layout(self, data: bytes) -> TokenLayout:
        lines = [line.split() for line in data.splitlines()]
        starts = np.cumsum([0] + [len(line) for line in lines]).tolist()
        accepted, names = self._unique(self._accepted_fields(lines))
        value_positions = [starts[f.line] + f.token for f in accepted]
        contributing = sorted({f.line for f in accepted})
        label_positions = [starts[line] + t for line in contributing for t in self.label_tokens
                           if t < len(lines[line])]
        tokens = [token for line in lines for token in line]
        scales = [f.scale for f in accepted] if any(f.scale != 1.0 for f in accepted) else None
        return TokenLayout(names, len(tokens), value_positions, label_positions,
                           tuple(tokens[p] for p in label_positions), scales, self.number_base)

    def _unique(self, fields: list[Field]) -> tuple[list[Field], tuple[str, ...]]:
        """The fields with their channel names; a name seen twice keeps its first value and is reported once."""
        kept, names, seen = [], [], set()
        for field in fields:
            name = self._register(field.metric, field.device, field.subsystem, field.kind, field.unit)
            if name in seen:
                self._warn_once(f"repeat:{name}", "%s: %s appears more than once; the first is kept", self.source, name)
                continue
            seen.add(name)
            kept.append(field)
            names.append(name)
        return kept, tuple(names)

    def _accepted_fields(self, lines: list[list[bytes]]) -> list[Field]:
        """The fields of every line whose values parse; a line that does not is skipped and reported once."""
        accepted: list[Field] = []
        by_line: dict[int, list[Field]] = {}
        try:
            for field in self.fields(lines):
                by_line.setdefault(field.line, []).append(field)
        except (ValueError, IndexError) as error:  # the file's structure, not one line, is not as expected
            self._warn_once(f"layout:{error}", "%s: cannot read the file's layout (%s)", self.source, error)
        for line_number, line_fields in by_line.items():
            try:
                for field in line_fields:
                    int(lines[line_number][field.token], self.number_base) if self.number_base != 10 \
                        else float(lines[line_number][field.token])
            except (ValueError, IndexError) as error:
                self._skip_line(lines[line_number] if line_number < len(lines) else [], error)
                continue
            accepted += line_fields
        return accepted


class SysfsFilesCollector(Collector):
    """Many one-value files (sysfs attributes), discovered once and re-read with pread each time."""

    def __init__(self, procfs="/proc", sysfs="/sys"):
        super().__init__(procfs, sysfs)
        self._files: list[tuple[str, PersistentFile, float]] | None = None
        self._names_tuple: tuple[str, ...] = ()

    @abstractmethod
    def discover(self) -> Iterable[tuple[Channel, Path, float]]:
        """(channel, file, scale) for every value this source has on this host."""

    def read(self) -> Reading:
        if self._files is None:
            self._files = [(self._remember(channel), PersistentFile(path), scale)
                           for channel, path, scale in self.discover()]
            self._names_tuple = tuple(name for name, _, _ in self._files)
            if not self._files:
                raise FileNotFoundError(f"{self.source}: nothing to read on this host")
        values = [math.nan] * len(self._files)
        for index, (name, handle, scale) in enumerate(self._files):
            try:
                values[index] = float(handle.read().split()[0]) * scale
            except (OSError, ValueError, IndexError) as error:  # one unreadable attribute costs one channel
                self._warn_once(name, "%s: cannot read %s (%s); the channel reads NaN", self.source, handle.path,
                                error)
        return Reading(self._names_tuple, finite_or_nan(values))

    def collect(self) -> dict[str, float]:
        reading = self.read()
        return dict(zip(reading.names, _as_list(reading.values)))

    def files(self) -> tuple[Path, ...]:
        return tuple(handle.path for _, handle, _ in self._files or ())

    def close(self) -> None:
        for _, handle, _ in self._files or ():
            handle.close()

    def _remember(self, channel: Channel) -> str:
        self._channels.setdefault(channel.name, channel)
        return channel.name
