"""What every collector shares: an injected root, a memo of the channels it reports, and fast re-reading.

A collector's `read()` returns a Reading: the channel names, in an order that stays the same (the very same tuple)
while the source's layout is unchanged, and their values. The registry uses the tuple's identity to place values
into the frame without looking names up on every tick.
"""

from __future__ import annotations

import logging
import math
import operator
import os
import weakref
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from schemas.records import Channel

try:
    from producers.collectors import _tokenscan
except ImportError:  # built by `pip install`; without it the same layouts are read in Python, only slower
    _tokenscan = None

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


class PersistentFile:
    """A file kept open and re-read from offset 0 with pread: procfs and sysfs regenerate it on each read.

    The read size follows the file's size (a larger buffer costs an allocation on every read). A file dropped
    without close() is closed when it is collected, so a collector that forgets one does not leak descriptors.
    """

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None
        self._closer: weakref.finalize | None = None
        self._size = 4096

    @property
    def size(self) -> int:
        """The read size that holds the whole file, as far as reads have shown."""
        return self._size

    def fileno(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            self._closer = weakref.finalize(self, os.close, self._fd)
        return self._fd

    def read(self) -> bytes:
        fd = self.fileno()
        try:
            data = os.pread(fd, self._size, 0)
            while len(data) >= self._size:  # the file outgrew the buffer: read it again, whole
                self._size *= 4
                data = os.pread(fd, self._size, 0)
        except OSError:
            self.close()
            raise
        self._size = max(4096, 2 * len(data))
        return data

    def close(self) -> None:
        if self._closer is not None:
            self._closer()
            self._closer = None
        self._fd = None


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


class TokenLayout:
    """The positions of values and labels among a file's whitespace tokens, for re-reading without re-parsing."""

    def __init__(self, names: tuple[str, ...], token_count: int, value_positions: list[int],
                 label_positions: list[int], labels: tuple[bytes, ...], scales: list[float] | None, base: int):
        self.names, self.token_count, self.labels, self.scales, self.base = names, token_count, labels, scales, base
        self.value_positions, self.label_positions = value_positions, label_positions
        self._values = _getter(value_positions)
        self._labels = _getter(label_positions)
        self._count = len(value_positions)

    def matches(self, tokens: list[bytes]) -> bool:
        return len(tokens) == self.token_count and self._labels(tokens) == self.labels

    def values(self, tokens: list[bytes]) -> list[float]:
        """The values at the layout's positions; ValueError if one of them is not a number."""
        convert = float if self.base == 10 else (lambda token: float(int(token, self.base)))
        values = list(map(convert, self._values(tokens)))
        if self.scales is not None:
            values = list(map(operator.mul, values, self.scales))
        return _finite_or_nan(values)


class ScannedLayout:
    """A TokenLayout applied by the compiled scanner: one call reads the file, checks the labels and fills the values.

    `values()` returns None when the scanner cannot vouch for the result (labels or token count changed, a value is
    not a plain number, the file outgrew the buffer); the caller then parses `text()` in Python as before.
    """

    def __init__(self, layout: TokenLayout, data: bytes, read_size: int):
        order = np.argsort(layout.value_positions, kind="stable")
        self.names = layout.names
        self._wanted = np.asarray(layout.value_positions, dtype=np.int32)[order]
        self._slots = order.astype(np.int32)
        self._scales = None if layout.scales is None else np.asarray(layout.scales, dtype=np.float64)[order]
        self._labels = np.asarray(sorted(layout.label_positions), dtype=np.int32)
        self._base = layout.base
        self._out = np.empty(len(self._wanted))
        self._buffer = bytearray(max(read_size, len(data) + 1))
        self._buffer[:len(data)] = data
        _, self._tokens, self._label_hash, _ = self._scan(-1, len(data))
        self._length = 0

    def values(self, fd: int) -> np.ndarray | None:
        self._length, tokens, label_hash, ok = self._scan(fd, 0)
        if ok and tokens == self._tokens and label_hash == self._label_hash:
            return self._out.copy()
        return None

    def text(self) -> bytes | None:
        """The bytes of the last read, unless they filled the buffer (the file may be longer)."""
        return bytes(self._buffer[:self._length]) if self._length < len(self._buffer) else None

    def _scan(self, fd: int, length: int) -> tuple[int, int, int, int]:
        return _tokenscan.scan(fd, self._buffer, length, self._wanted, self._slots, self._out, self._scales,
                               self._labels, self._base)


def _finite_or_nan(values: list[float]) -> list[float]:
    """'inf' in a kernel file is text, not a measurement: it reads as NaN like any unreadable value."""
    if math.inf in values or -math.inf in values:
        return [math.nan if math.isinf(v) else v for v in values]
    return values


def _as_list(values) -> list[float]:
    return values.tolist() if isinstance(values, np.ndarray) else list(values)


def _getter(positions: list[int]) -> Callable[[list[bytes]], tuple]:
    """itemgetter that always returns a tuple, even for zero or one position."""
    if len(positions) == 1:
        only = positions[0]
        return lambda tokens: (tokens[only],)
    if not positions:
        return lambda tokens: ()
    return operator.itemgetter(*positions)


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
        if self._scanned is None and self._layout is not None and _tokenscan is not None:
            self._scanned = ScannedLayout(self._layout, data, self._file.size)
        return reading

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
        return Reading(self._names_tuple, _finite_or_nan(values))

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
