"""The records (frames, catalogs, anomalies, alerts, host windows) survive their encoders and validating decoders;
under hostile input, 10,000 cases and more, any bytes either decode into a valid frame or raise DecodeError with a
reason: nothing else escapes, and nothing invalid is let through."""

import math
import struct
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from schemas.agent_records import FRAME_SCHEMA_FINGERPRINT, SINGLE_OBJECT_MARKER
from schemas.codec import AvroCodec, DecodeError, load_schema
from schemas.records import (FRAME_CODEC, HOST_WINDOW_CODEC, Alert, Anomaly, Catalog, Channel, Evidence, Frame,
                             HostWindow, PersistedChannel, decode_alert, decode_anomaly, decode_catalog, decode_frame,
                             decode_frames, decode_host_window, encode_alert, encode_anomaly, encode_catalog,
                             encode_frame, encode_frames, encode_host_window, frames_in)
from schemas.varint import avro_long


def a_catalog() -> Catalog:
    return Catalog("gpu-node-7", "train-a", (Channel("cpu.user.cpu0", "cpu", "counter", "ticks", "cpu0"),
                                             Channel("mem.MemFree", "memory", "gauge", "bytes")), 0.1)


def test_frame_round_trip_keeps_nan():
    frame = Frame("gpu-node-7", "train-a", 1_700_000_000_123_456_789, 42, a_catalog().version, (1.5, math.nan))
    decoded = decode_frame(encode_frame(frame))
    assert decoded.values[0] == 1.5 and math.isnan(decoded.values[1])
    assert (decoded.host, decoded.timestamp_ns, decoded.sequence) == ("gpu-node-7", 1_700_000_000_123_456_789, 42)


def test_catalog_round_trip_and_version_is_content_fingerprint():
    catalog = a_catalog()
    assert decode_catalog(encode_catalog(catalog)) == catalog
    renamed = Catalog("other-host", "train-a", catalog.channels, 0.1)
    assert renamed.version == catalog.version
    extended = Catalog("gpu-node-7", "train-a", catalog.channels + (Channel("x", "cpu", "gauge"),), 0.1)
    assert extended.version != catalog.version


def test_hosts_declaring_the_same_channels_share_them_once_decoded():
    catalog = a_catalog()
    first = decode_catalog(encode_catalog(catalog))
    second = decode_catalog(encode_catalog(Catalog("gpu-node-8", "train-a", catalog.channels, 0.1)))
    assert all(a is b for a, b in zip(first.channels, second.channels))
    changed = decode_catalog(encode_catalog(Catalog("gpu-node-9", "train-a", (
        Channel("cpu.user.cpu0", "cpu", "counter", "ticks", "cpu1"),) + catalog.channels[1:], 0.1)))
    assert changed.channels[0].device == "cpu1" and changed.channels[1] is first.channels[1]


def test_anomaly_and_alert_round_trip():
    anomaly = Anomaly("h", "c", 17, 1, 2, ("zscore",), 3.5, 1.2, "cpu", "cpu busy is high",
                      (Evidence("cpu.user.cpu0", "mean", 90.0, 20.0, 2.0, 35.0),))
    assert decode_anomaly(encode_anomaly(anomaly)) == anomaly
    alert = Alert("a-1", "h", "c", "open", 1, 2, 0.9, "network", "retransmissions")
    assert decode_alert(encode_alert(alert)) == alert


def test_catalog_rejects_duplicate_channel_names():
    channel = Channel("cpu.user.cpu0", "cpu", "counter")
    with pytest.raises(ValueError, match="repeats channel names"):
        Catalog("h", "c", (channel, channel))


def test_channel_rejects_unknown_subsystem_naming_allowed_values():
    with pytest.raises(ValueError, match="not one of"):
        Channel("x", "fpga", "gauge")


def test_truncated_frame_is_rejected():
    message = encode_frame(Frame("h", "c", 5, 0, 7, (1.0, 2.0, 3.0)))
    with pytest.raises(DecodeError):
        decode_frame(message[:-5])


def test_frame_with_ragged_value_bytes_is_rejected():
    record = Frame("h", "c", 5, 0, 7, (1.0,)).to_record() | {"values": b"\x00" * 12}
    from schemas.records import FRAME_CODEC
    with pytest.raises(DecodeError, match="not a multiple of 8"):
        decode_frame(FRAME_CODEC.encode(record))


def test_frame_with_infinite_value_is_rejected():
    with pytest.raises(DecodeError, match="infinite"):
        decode_frame(encode_frame(Frame("h", "c", 5, 0, 7, (math.inf,))))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_never_crash_the_decoder(payload):
    try:
        decode_frame(payload)
    except DecodeError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=60), st.binary(min_size=1, max_size=8))
def test_corrupted_valid_frames_decode_or_raise_decode_error(position, garbage):
    message = bytearray(encode_frame(Frame("h", "c", 5, 3, 7, (1.0, 2.0, 3.0))))
    position = min(position, len(message) - 1)
    message[position:position + len(garbage)] = garbage
    try:
        frame = decode_frame(bytes(message))
    except DecodeError:
        return
    assert isinstance(frame, Frame)


def a_block(count: int, host: str = "h") -> list[Frame]:
    return [Frame(host, "c", 5 + i, i, 7, (float(i), math.nan, 3.0)) for i in range(count)]


def test_a_block_of_frames_is_one_message_read_back_in_order_and_counted_without_decoding():
    message = encode_frames(a_block(10))
    frames = decode_frames(message)
    assert [frame.sequence for frame in frames] == list(range(10)) and frames[9].values[0] == 9.0
    assert frames_in(message) == 10 and frames_in(encode_frame(a_block(1)[0])) == 1
    assert decode_frames(encode_frame(a_block(1)[0]))[0].sequence == 0, "a message of one frame is a block of one"
    assert frames_in(encode_catalog(a_catalog())) == 0 and frames_in(message[:-1]) == 9


def test_a_record_whose_length_is_negative_ends_the_count_instead_of_reading_backwards():
    header = SINGLE_OBJECT_MARKER + FRAME_SCHEMA_FINGERPRINT
    # a host of length -len(header)-1 sends the reader back to the record's own start, forever, unless refused
    looping = header + avro_long(-(len(header) + 1)) + avro_long(0) + avro_long(1) * 3 + avro_long(0)
    message = encode_frames(a_block(2)) + looping
    assert frames_in(message) == 2


def test_a_block_cut_short_or_mixing_hosts_is_rejected_naming_the_record():
    message = encode_frames(a_block(4))
    with pytest.raises(DecodeError, match="record 4 of the message"):
        decode_frames(message[:-3])
    with pytest.raises(DecodeError, match="record 5 of the message: not an Avro single-object"):
        decode_frames(message + b"\x00\x01")
    with pytest.raises(DecodeError, match="several hosts: a, h"):
        decode_frames(encode_frames(a_block(2) + a_block(1, host="a")))
    with pytest.raises(DecodeError, match="holds no frame"):
        decode_frames(b"")


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=200), st.binary(min_size=1, max_size=8))
def test_corrupted_blocks_decode_or_raise_decode_error_and_are_counted_without_error(position, garbage):
    message = bytearray(encode_frames(a_block(4)))
    position = min(position, len(message) - 1)
    message[position:position + len(garbage)] = garbage
    assert 0 <= frames_in(bytes(message)) <= 5
    try:
        frames = decode_frames(bytes(message))
    except DecodeError:
        return
    assert all(isinstance(frame, Frame) for frame in frames)


def a_host_window(names: tuple[str, ...]) -> HostWindow:
    return HostWindow("h", "c", 9, 1, 2, 7, names, np.arange(len(names), dtype=float), True, 2.5, 3.0, 100.0, 0.2,
                      1.0, 0.0, 0.0)


@pytest.mark.parametrize("names", [("cpu.user.cpu0", "mem.MemFree", "ünïcode"), ("a\nb", "c"), ()])
def test_host_window_round_trip_keeps_names_and_means(names):
    summary = a_host_window(names)
    decoded = decode_host_window(encode_host_window(summary))
    assert decoded.names == names and decoded.means.tolist() == summary.means.tolist()
    assert (decoded.host, decoded.window_id, decoded.flagged, decoded.retransmits) == ("h", 9, True, 3.0)


def test_host_window_of_the_first_schema_version_is_read():
    """Workers of the previous release wrote the names as a list; a newer cluster stage still reads them."""
    summary = a_host_window(("cpu.user.cpu0", "mem.MemFree"))
    record = summary.to_record()
    record["names"] = list(summary.names)
    del record["joined_names"]
    decoded = decode_host_window(AvroCodec(load_schema("older/host_window-1")).encode(record))
    assert decoded.names == summary.names and decoded.means.tolist() == [0.0, 1.0]


def test_host_window_of_the_second_schema_version_is_read_and_its_persisted_channels_say_no_departure():
    """Before persisted channels carried their departure, the cluster stage read it from `departures`."""
    summary = replace(a_host_window(("cpu.user.cpu0", "mem.MemFree")),
                      persisted=(PersistedChannel(1, 4.5, "memory", "std", 7.0),))
    record = summary.to_record()
    del record["persisted"][0]["departure"]
    decoded = decode_host_window(AvroCodec(load_schema("older/host_window-2")).encode(record))
    assert decoded.persisted == (PersistedChannel(1, 4.5, "memory", "std", 0.0),)
    assert decode_host_window(encode_host_window(summary)).persisted == summary.persisted


def test_host_window_keeps_its_channels_kinds_and_the_third_schema_version_reads_without_them():
    """Peers compare settings exactly and trouble without a learned offset, so the cluster stage needs the kinds."""
    summary = replace(a_host_window(("net.mtu.eth0", "snmp.Tcp.RetransSegs")), kinds=("static", "event"))
    assert decode_host_window(encode_host_window(summary)).kinds == ("static", "event")
    record = summary.to_record()
    del record["joined_kinds"]
    assert decode_host_window(AvroCodec(load_schema("older/host_window-3")).encode(record)).kinds == ()
    record = summary.to_record()
    record["joined_kinds"] = b"static"
    with pytest.raises(DecodeError, match="1 kinds for 2 names"):
        decode_host_window(HOST_WINDOW_CODEC.encode(record))


def test_host_window_with_more_means_than_names_is_rejected():
    record = a_host_window(("a", "b")).to_record()
    record["joined_names"] = b"a"
    with pytest.raises(DecodeError, match="16 mean bytes for 1 names"):
        decode_host_window(HOST_WINDOW_CODEC.encode(record))


# The frame decoder under hostile input.

FUZZ = settings(max_examples=2_500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
VALUES = st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), max_size=40)


def _judged(message: bytes) -> Frame | None:
    """The decoder's verdict: a frame that passes every check, or None with a non-empty reason."""
    try:
        frame = decode_frame(message)
    except DecodeError as error:
        assert str(error), "a rejection must say why"
        return None
    assert frame.host and frame.sequence >= 0 and frame.timestamp_ns > 0
    assert not np.isinf(frame.values).any()
    return frame


@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes(payload):
    _judged(payload)


@FUZZ
@given(st.text(max_size=12), st.text(max_size=12), st.integers(-(2**63), 2**63 - 1), st.integers(-(2**63), 2**63 - 1),
       st.integers(-(2**63), 2**63 - 1), VALUES)
def test_every_field_at_its_extremes(host, cluster, timestamp, sequence, version, values):
    message = FRAME_CODEC.encode({"host": host, "cluster": cluster, "timestamp_ns": timestamp, "sequence": sequence,
                                  "catalog_version": version, "values": struct.pack(f"<{len(values)}d", *values)})
    frame = _judged(message)
    valid = bool(host) and sequence >= 0 and timestamp > 0 and not any(math.isinf(v) for v in values)
    assert (frame is not None) == valid


@FUZZ
@given(st.integers(1, 10**12), st.integers(0, 10**6), VALUES, st.integers(0, 400), st.data())
def test_truncated_and_overwritten_frames(timestamp, sequence, values, cut, data):
    finite = [v if math.isfinite(v) else 0.0 for v in values]
    message = bytearray(encode_frame(Frame("host-a", "c", timestamp, sequence, 7, np.asarray(finite))))
    if data.draw(st.booleans()):
        message = message[:min(cut, len(message))]
    else:
        position = data.draw(st.integers(0, len(message) - 1))
        message[position] = data.draw(st.integers(0, 255))
    _judged(bytes(message))


@FUZZ
@given(st.binary(min_size=8, max_size=8), st.binary(max_size=64))
def test_an_unknown_schema_version_is_rejected_by_its_fingerprint(fingerprint, body):
    message = b"\xc3\x01" + fingerprint + body
    if fingerprint != FRAME_CODEC.fingerprint:
        assert _judged(message) is None
