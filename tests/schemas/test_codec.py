"""Avro single-object encoding: a reader resolves data of the older writer schemas it knows, refuses unknown writer
schemas and payloads that are not single-object messages."""

import copy
import struct

import pytest

from schemas.codec import AvroCodec, DecodeError, load_schema
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
