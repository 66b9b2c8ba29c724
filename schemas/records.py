"""Frozen dataclasses mirroring the Avro records, with their encoders and validating decoders (the agent's own
records, catalogs and frames, live in schemas.agent_records and are re-exported here)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np

from schemas.agent_records import (CATALOG_SCHEMA_FINGERPRINT, CHANNEL_KINDS, FRAME_SCHEMA_FINGERPRINT, VALUE_DTYPE,
                                   Catalog, Channel, Frame, catalog_fingerprint, encode_catalog, encode_frame,
                                   encode_frames, frames_in, shared_channel)
from schemas.channels import SUBSYSTEMS
from schemas.codec import AvroCodec, DecodeError, load_schema

DEPARTURE_DTYPE = np.dtype("<f4")
DEPARTS_AT = 1.0  # a departure this large (in band widths, either sign) lies outside the band


@dataclass(frozen=True)
class Evidence:
    """One metric–feature pair behind an anomaly, against its baseline."""

    channel: str
    feature: str
    value: float
    baseline_mean: float
    baseline_std: float
    z: float


@dataclass(frozen=True)
class Anomaly:
    """One anomalous window of one host."""

    host: str
    cluster: str
    window_id: int
    window_start_ns: int
    window_end_ns: int
    detectors: tuple[str, ...]
    score: float
    threshold: float
    subsystem: str
    claim: str
    evidence: tuple[Evidence, ...]
    explanation: str = ""
    hint: str = ""

    def to_record(self) -> dict:
        return asdict(self) | {"detectors": list(self.detectors), "evidence": [asdict(e) for e in self.evidence]}

    @classmethod
    def from_record(cls, record: dict) -> "Anomaly":
        evidence = tuple(Evidence(**e) for e in record["evidence"])
        return cls(**(record | {"detectors": tuple(record["detectors"]), "evidence": evidence}))


@dataclass(frozen=True)
class Alert:
    """An incident as operators see it, in one of its states: open, update, closed."""

    alert_id: str
    host: str
    cluster: str
    state: str
    start_ns: int
    end_ns: int
    severity: float
    subsystem: str
    summary: str
    hint: str = ""
    kind: str = "anomaly"


@dataclass(frozen=True)
class PersistedChannel:
    """A channel that has stayed outside its baseline band long enough to count (see HostWindow.persisted)."""

    index: int
    z: float
    subsystem: str
    feature: str = "mean"
    departure: float = 0.0


@dataclass(frozen=True, eq=False)
class HostWindow:
    """One host's summary of one window, for the cluster stage (see host_window.avsc)."""

    host: str
    cluster: str
    window_id: int
    window_start_ns: int
    window_end_ns: int
    catalog_version: int
    names: tuple[str, ...]
    means: np.ndarray
    flagged: bool
    severity: float
    retransmits: float
    segments_out: float
    traffic_burstiness: float
    irq_z: float
    cpu_freq_z: float
    gpu_power_z: float
    departures: np.ndarray | None = None
    persisted: tuple[PersistedChannel, ...] = ()
    kinds: tuple[str, ...] = ()  # one per name: gauge, counter, event, static or derived; () when the writer did not say

    def to_record(self) -> dict:
        joined = _joined_names(self.names)
        departures = b"" if self.departures is None else np.asarray(self.departures, DEPARTURE_DTYPE).tobytes()
        return {**{f: getattr(self, f) for f in self.__dataclass_fields__ if f != "kinds"},
                "names": [] if joined else list(self.names), "joined_names": joined or b"",
                "joined_kinds": _joined_names(self.kinds) or b"",
                "means": np.asarray(self.means, dtype=VALUE_DTYPE).tobytes(), "departures": departures,
                "persisted": [asdict(p) for p in self.persisted]}


@lru_cache(maxsize=512)
def _joined_names(names: tuple[str, ...]) -> bytes | None:
    """The names as one newline-separated field, or None when a name holds a newline (then they go as a list)."""
    if any("\n" in name for name in names):
        return None
    return "\n".join(names).encode("utf-8")


@lru_cache(maxsize=512)
def _split_names(joined: bytes) -> tuple[str, ...]:
    """The names a joined field carries; hosts send the same names every window, so each list is split once."""
    return tuple(joined.decode("utf-8").split("\n")) if joined else ()


FRAME_CODEC = AvroCodec("frame")
CATALOG_CODEC = AvroCodec("catalog")
ANOMALY_CODEC = AvroCodec("anomaly")
ALERT_CODEC = AvroCodec("alert")
DEADLETTER_CODEC = AvroCodec("deadletter")
HOST_WINDOW_CODEC = AvroCodec("host_window", older_writer_schemas=(load_schema("older/host_window-1"),
                                                                   load_schema("older/host_window-2"),
                                                                   load_schema("older/host_window-3")))


FRAME_FIELDS = ("host", "cluster", "timestamp_ns", "sequence", "catalog_version", "values")


def _check_agent_encoders() -> None:
    """The hand-written encoders of schemas.agent_records still write what the .avsc files say."""
    for codec, written in ((FRAME_CODEC, FRAME_SCHEMA_FINGERPRINT), (CATALOG_CODEC, CATALOG_SCHEMA_FINGERPRINT)):
        if codec.fingerprint != written:
            raise ImportError(f"schemas/avro/{codec.name.rsplit('.', 1)[-1].lower()}.avsc changed (fingerprint now "
                              f"{codec.fingerprint.hex()}): update schemas/agent_records.py's encoder and fingerprint")
    if tuple(f["name"] for f in FRAME_CODEC.schema["fields"]) != FRAME_FIELDS:
        raise ImportError(f"frame.avsc no longer has the fields {FRAME_FIELDS} that encode_frame writes")
    channel = CATALOG_CODEC.schema["fields"][-1]["type"]["items"]["fields"]
    if (channel[1]["type"]["symbols"], channel[2]["type"]["symbols"]) != (list(SUBSYSTEMS), list(CHANNEL_KINDS)):
        raise ImportError("catalog.avsc's Subsystem or ChannelKind symbols differ from schemas.channels.SUBSYSTEMS "
                          "or CHANNEL_KINDS, which encode_catalog writes by their index")


_check_agent_encoders()


def decode_frame(message: bytes) -> Frame:
    """A validated frame; DecodeError for bytes that are not one, or a frame that makes no sense."""
    return decode_frame_record(FRAME_CODEC.decode(message))


def decode_frames(message: bytes) -> tuple[Frame, ...]:
    """The frames of a reveal.samples message: one or more frame records of one host, back to back, in the order they
    were sampled (an agent sends a block of ticks as one message); DecodeError when any is not a valid frame."""
    frames = tuple(decode_frame_record(record) for record in FRAME_CODEC.decode_all(message))
    if not frames:
        raise DecodeError("an empty message holds no frame")
    hosts = {frame.host for frame in frames}
    if len(hosts) > 1:
        raise DecodeError(f"one message holds frames of several hosts: {', '.join(sorted(hosts))}")
    return frames


def decode_frame_record(record: dict) -> Frame:
    """A validated frame from its decoded Avro record; DecodeError when it makes no sense."""
    if not record["host"]:
        raise DecodeError("frame has an empty host")
    if record["sequence"] < 0:
        raise DecodeError(f"frame of {record['host']!r} has negative sequence {record['sequence']}")
    if record["timestamp_ns"] <= 0:
        raise DecodeError(f"frame of {record['host']!r} has non-positive timestamp_ns {record['timestamp_ns']}")
    packed = record["values"]
    if len(packed) % VALUE_DTYPE.itemsize:
        raise DecodeError(f"frame of {record['host']!r} seq {record['sequence']} has {len(packed)} value bytes, "
                          f"not a multiple of {VALUE_DTYPE.itemsize}")
    values = np.frombuffer(packed, dtype=VALUE_DTYPE)
    if np.isinf(values).any():
        raise DecodeError(f"frame of {record['host']!r} seq {record['sequence']} carries an infinite value")
    return Frame(record["host"], record["cluster"], record["timestamp_ns"], record["sequence"],
                 record["catalog_version"], values)


def decode_catalog(message: bytes) -> Catalog:
    """A validated catalog; DecodeError when the bytes or the channel list are not valid."""
    record = CATALOG_CODEC.decode(message)
    try:
        return Catalog.from_record(record)
    except ValueError as error:
        raise DecodeError(str(error)) from error


def encode_anomaly(anomaly: Anomaly) -> bytes:
    return ANOMALY_CODEC.encode(anomaly.to_record())


def decode_anomaly(message: bytes) -> Anomaly:
    return Anomaly.from_record(ANOMALY_CODEC.decode(message))


def encode_alert(alert: Alert) -> bytes:
    return ALERT_CODEC.encode(asdict(alert))


def decode_alert(message: bytes) -> Alert:
    return Alert(**ALERT_CODEC.decode(message))


def encode_host_window(summary: HostWindow) -> bytes:
    return HOST_WINDOW_CODEC.encode(summary.to_record())


def decode_host_window(message: bytes) -> HostWindow:
    """A validated host-window summary; DecodeError when its means do not match its names."""
    record = HOST_WINDOW_CODEC.decode(message)
    joined = record.pop("joined_names", b"")
    try:
        names = _split_names(joined) if joined else tuple(record["names"])
        kinds = _split_names(record.pop("joined_kinds", b"") or b"")
    except UnicodeDecodeError as error:
        raise DecodeError(f"host window of {record['host']!r}: its names or kinds are not UTF-8 ({error})") from error
    means = np.frombuffer(record["means"], dtype=VALUE_DTYPE) if len(record["means"]) % 8 == 0 else None
    if means is None or len(means) != len(names):
        raise DecodeError(f"host window of {record['host']!r}: {len(record['means'])} mean bytes for "
                          f"{len(names)} names")
    if kinds and len(kinds) != len(names):
        raise DecodeError(f"host window of {record['host']!r}: {len(kinds)} kinds for {len(names)} names")
    departures = _departures(record, len(names))
    persisted = tuple(PersistedChannel(**p) for p in record.pop("persisted", []))
    if any(not 0 <= p.index < len(names) for p in persisted):
        raise DecodeError(f"host window of {record['host']!r}: a persisted channel's index is outside its "
                          f"{len(names)} names")
    return HostWindow(**(record | {"names": names, "means": means, "departures": departures,
                                   "persisted": persisted, "kinds": kinds}))


def _departures(record: dict, names: int) -> np.ndarray | None:
    raw = record.pop("departures", b"")
    if not raw:
        return None
    if len(raw) != names * DEPARTURE_DTYPE.itemsize:
        raise DecodeError(f"host window of {record['host']!r}: {len(raw)} departure bytes for {names} names")
    return np.frombuffer(raw, dtype=DEPARTURE_DTYPE)
