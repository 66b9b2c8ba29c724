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


def read_unsigned_varint(data: bytes, position: int) -> tuple[int, int]:
    """The base-128 varint at `position` and the position after it; IndexError when the data ends inside it."""
    number, shift = 0, 0
    while True:
        byte = data[position]
        position += 1
        number |= (byte & 0x7F) << shift
        if byte < 0x80:
            return number, position
        shift += 7


def read_avro_long(data: bytes, position: int) -> tuple[int, int]:
    """The Avro long at `position` and the position after it."""
    zigzag, position = read_unsigned_varint(data, position)
    return (zigzag >> 1) ^ -(zigzag & 1), position
