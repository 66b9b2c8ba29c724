"""Base-128 varints (LEB128): Avro's longs after zig-zag, and RowBinary's length prefixes."""

from __future__ import annotations


def unsigned_varint(number: int) -> bytes:
    """A base-128 varint (LEB128), low groups first: Avro's longs after zig-zag, and RowBinary's length prefixes."""
    out = bytearray()
    while number > 0x7F:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def avro_long(number: int) -> bytes:
    """An Avro long: zig-zag, then a base-128 varint."""
    return unsigned_varint((number << 1) ^ (number >> 63))
