"""Avro single-object encoding: a reader resolves data of the older writer schemas it knows, refuses unknown writer
schemas and payloads that are not single-object messages, and its varints are Avro's."""

import copy
import io
import struct

import fastavro
import pytest

from schemas.codec import AvroCodec, DecodeError, load_schema
from schemas.varint import avro_long, unsigned_varint
from schemas.records import Frame, decode_frame


def test_reader_with_added_optional_field_reads_old_data():
    old = load_schema("frame")
    new = copy.deepcopy(old)
    new["fields"].append({"name": "agent_version", "type": ["null", "string"], "default": None})
    old_bytes = AvroCodec(old).encode(Frame("h", "c", 1, 0, 7, (1.0,)).to_record())
    record = AvroCodec(new, older_writer_schemas=(old,)).decode(old_bytes)
    assert record["agent_version"] is None and record["values"] == struct.pack("<d", 1.0)


def test_reader_rejects_unknown_writer_schema():
    old = load_schema("frame")
    new = copy.deepcopy(old)
    new["fields"].append({"name": "agent_version", "type": ["null", "string"], "default": None})
    newer_bytes = AvroCodec(new).encode(Frame("h", "c", 1, 0, 7, (1.0,)).to_record() | {"agent_version": "2"})
    with pytest.raises(DecodeError, match="unknown writer schema"):
        decode_frame(newer_bytes)


@pytest.mark.parametrize("payload, reason", [
    (b"", "not an Avro single-object message"),
    (b"{\"host\": \"x\"}", "not an Avro single-object message"),
])
def test_non_avro_payloads_are_rejected_with_reason(payload, reason):
    with pytest.raises(DecodeError, match=reason):
        decode_frame(payload)


@pytest.mark.parametrize("number, encoded", [(0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"),
                                             (300, b"\xac\x02")])
def test_unsigned_varint_is_leb128(number, encoded):
    assert unsigned_varint(number) == encoded


@pytest.mark.parametrize("number", [0, 1, -1, 63, -64, 64, 2**31, -(2**63), 2**63 - 1])
def test_avro_long_matches_fastavro(number):
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, "long", number)
    assert avro_long(number) == buffer.getvalue()
