"""Varints: LEB128 for RowBinary's lengths, and Avro's zig-zag longs exactly as fastavro writes them."""

import io

import fastavro
import pytest

from schemas.varint import avro_long, unsigned_varint


@pytest.mark.parametrize("number, encoded", [(0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"),
                                             (300, b"\xac\x02")])
def test_unsigned_varint_is_leb128(number, encoded):
    assert unsigned_varint(number) == encoded


@pytest.mark.parametrize("number", [0, 1, -1, 63, -64, 64, 2**31, -(2**63), 2**63 - 1])
def test_avro_long_matches_fastavro(number):
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, "long", number)
    assert avro_long(number) == buffer.getvalue()
