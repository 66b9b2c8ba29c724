"""What an agent writes: a host's channel catalog and its frames of values, with their single-object Avro encoders.

These encoders are written out by hand, byte for byte what the schemas' fastavro codecs write (schemas.records checks
the fingerprints below against the .avsc files when it is imported, and the tests compare every byte): the agent
encodes ten frames a second for ever, and its process never loads fastavro (~9 MiB resident).
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property, lru_cache

import numpy as np

from schemas.channels import SUBSYSTEMS
from schemas.varint import avro_long, read_avro_long

VALUE_DTYPE = np.dtype("<f8")
CHANNEL_KINDS = ("gauge", "counter", "event", "static")
SINGLE_OBJECT_MARKER = b"\xc3\x01"
# The CRC-64-AVRO fingerprints of schemas/avro/frame.avsc and catalog.avsc (little-endian), as fastavro computes
# them; importing schemas.records fails, naming the new value, when a schema no longer has this one.
FRAME_SCHEMA_FINGERPRINT = bytes.fromhex("1ac91a95eb2ce418")
CATALOG_SCHEMA_FINGERPRINT = bytes.fromhex("e9e27f1bd593803f")


@dataclass(frozen=True)
class Channel:
    """One time series of a host: what it measures, where, and how its values behave."""

    name: str
    subsystem: str
    kind: str
    unit: str = ""
    device: str = ""

    def __post_init__(self):
        if self.subsystem not in SUBSYSTEMS:
            raise ValueError(f"channel {self.name!r}: subsystem {self.subsystem!r} is not one of {SUBSYSTEMS}")
        if self.kind not in CHANNEL_KINDS:
            raise ValueError(f"channel {self.name!r}: kind {self.kind!r} is not one of {CHANNEL_KINDS}")


@lru_cache(maxsize=1 << 16)
def shared_channel(name: str, subsystem: str, kind: str, unit: str = "", device: str = "") -> Channel:
    """One Channel per distinct declaration, shared by every catalog that declares it: a fleet's hosts mostly
    declare the same channels, and each decoded catalog holding its own strings cost ~350 KB per host."""
    return Channel(name, subsystem, kind, unit, device)


@dataclass(frozen=True)
class Catalog:
    """The ordered channel list of one host; frames carry its version and values in this order. Agents list the
    channels in `canonical_order`, so that one set of channels has one layout as well as one version."""

    host: str
    cluster: str
    channels: tuple[Channel, ...]
    interval_s: float = 0.1
    version: int = field(default=0)

    def __post_init__(self):
        names = [c.name for c in self.channels]
        if len(set(names)) != len(names):
            duplicated = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"catalog of {self.host!r} repeats channel names {duplicated[:5]}")
        if self.version == 0:
            object.__setattr__(self, "version", catalog_fingerprint(self.channels))

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.channels)

    @cached_property
    def kinds(self) -> tuple[str, ...]:
        return tuple(c.kind for c in self.channels)

    def to_record(self) -> dict:
        return {"host": self.host, "cluster": self.cluster, "version": self.version,
                "interval_s": self.interval_s, "channels": [asdict(c) for c in self.channels]}

    @classmethod
    def from_record(cls, record: dict) -> "Catalog":
        """The catalog a record describes, keeping the version it claims (its frames name it) once checked against
        its channels: recordings made before versions ignored order claim their ordered list's fingerprint."""
        channels = tuple(shared_channel(**c) for c in record["channels"])
        if record["version"] not in (catalog_fingerprint(channels), ordered_fingerprint(channels)):
            raise ValueError(f"catalog of {record['host']!r} claims version {record['version']} "
                             f"but its channels fingerprint to {catalog_fingerprint(channels)}")
        return cls(record["host"], record["cluster"], channels, record["interval_s"], record["version"])


def catalog_fingerprint(channels: Iterable[Channel]) -> int:
    """A stable 31-bit fingerprint of the set of channels, whatever their order: equal sets give equal versions on
    every host and in every run."""
    return _crc31(sorted(_declaration(c) for c in channels))


def ordered_fingerprint(channels: Iterable[Channel]) -> int:
    """The fingerprint of the channel list in its order, which catalogs were versioned by before it was ignored."""
    return _crc31(_declaration(c) for c in channels)


def _declaration(channel: Channel) -> str:
    return f"{channel.name}|{channel.subsystem}|{channel.kind}|{channel.unit}|{channel.device}"


def _crc31(lines: Iterable[str]) -> int:
    return zlib.crc32("\n".join(lines).encode()) & 0x7FFFFFFF or 1


_DIGITS = re.compile(r"(\d+)")


def canonical_order(names: Sequence[str]) -> list[int]:
    """The positions of `names` in a catalog's canonical order, by name with numbers compared as numbers (cpu2
    before cpu10): the order is then a property of the set of channels, as the version is.

    >>> canonical_order(["irq.RES.cpu0", "irq.36.cpu10", "irq.36.cpu2"])
    [2, 1, 0]
    """
    return sorted(range(len(names)), key=lambda i: (_natural_key(names[i]), names[i]))


def _natural_key(name: str) -> tuple:
    return tuple(int(part) if index % 2 else part for index, part in enumerate(_DIGITS.split(name)))


@dataclass(frozen=True, eq=False)
class Frame:
    """One host at one instant: its values (float64) in the order of the catalog named by catalog_version."""

    host: str
    cluster: str
    timestamp_ns: int
    sequence: int
    catalog_version: int
    values: np.ndarray

    def to_record(self) -> dict:
        return {"host": self.host, "cluster": self.cluster, "timestamp_ns": self.timestamp_ns,
                "sequence": self.sequence, "catalog_version": self.catalog_version,
                "values": np.asarray(self.values, dtype=VALUE_DTYPE).tobytes()}


def _avro_string(text: str) -> bytes:
    encoded = text.encode()
    return avro_long(len(encoded)) + encoded


_frame_prefixes: dict[tuple[str, str], bytes] = {}


def encode_frame(frame: Frame) -> bytes:
    """A frame as a single-object message: the header, host and cluster are cached per host, leaving three varints
    and the packed values per frame (a fifth of fastavro's cost per frame)."""
    prefix = _frame_prefixes.get((frame.host, frame.cluster))
    if prefix is None:
        prefix = _frame_prefixes.setdefault((frame.host, frame.cluster),
                                            SINGLE_OBJECT_MARKER + FRAME_SCHEMA_FINGERPRINT +
                                            _avro_string(frame.host) + _avro_string(frame.cluster))
    packed = np.asarray(frame.values, dtype=VALUE_DTYPE).tobytes()
    return b"".join((prefix, avro_long(frame.timestamp_ns), avro_long(frame.sequence),
                     avro_long(frame.catalog_version), avro_long(len(packed)), packed))


def encode_frames(frames: Iterable[Frame]) -> bytes:
    """Frames of one host as one reveal.samples message: their single-object records back to back."""
    return b"".join(map(encode_frame, frames))


def frames_in(message: bytes) -> int:
    """How many frame records a message holds, counted from their lengths without decoding them (0 for a catalog,
    and the whole ones before anything that is not a frame record)."""
    count, position, header = 0, 0, SINGLE_OBJECT_MARKER + FRAME_SCHEMA_FINGERPRINT
    try:
        while message.startswith(header, position):
            position += len(header)
            lengths = []
            for _ in range(2):  # host, cluster
                length, position = read_avro_long(message, position)
                lengths.append(length)
                position += length
            for _ in range(3):  # timestamp_ns, sequence, catalog_version
                _, position = read_avro_long(message, position)
            length, position = read_avro_long(message, position)
            lengths.append(length)
            position += length
            if position > len(message) or min(lengths) < 0:  # cut short, or a negative length: not a frame record
                break
            count += 1
    except IndexError:
        pass
    return count


def encode_catalog(catalog: Catalog) -> bytes:
    """A catalog as a single-object message; its channels are one Avro array block (none when empty)."""
    parts = [SINGLE_OBJECT_MARKER, CATALOG_SCHEMA_FINGERPRINT, _avro_string(catalog.host),
             _avro_string(catalog.cluster), avro_long(catalog.version), struct.pack("<d", catalog.interval_s)]
    if catalog.channels:
        parts.append(avro_long(len(catalog.channels)))
        for channel in catalog.channels:
            parts += (_avro_string(channel.name), avro_long(SUBSYSTEMS.index(channel.subsystem)),
                      avro_long(CHANNEL_KINDS.index(channel.kind)), _avro_string(channel.unit),
                      _avro_string(channel.device))
    parts.append(b"\x00")
    return b"".join(parts)
