"""The frame decoder under hostile input, 10,000 cases and more: any bytes either decode into a valid frame or raise
DecodeError with a reason; nothing else escapes, and nothing invalid is let through."""

import math
import struct

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from schemas.codec import DecodeError
from schemas.records import FRAME_CODEC, Frame, decode_frame, encode_frame

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
