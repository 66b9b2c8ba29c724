"""Avro single-object encoding for Reveal's records, built once per schema with fastavro.

Each message is the two marker bytes C3 01, the 8-byte CRC-64-AVRO fingerprint of the writer schema,
then the Avro body (Avro specification, "Single-object encoding"). The fingerprint lets a reader with a
newer schema resolve data written with an older one it has been told about.
"""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path

import fastavro
from fastavro.schema import fingerprint, to_parsing_canonical_form

SCHEMA_DIR = Path(__file__).with_name("avro")
_MARKER = b"\xc3\x01"
_HEADER_LEN = len(_MARKER) + 8


class DecodeError(ValueError):
    """A message that is not a valid record of the expected schema; the message says why."""


def load_schema(name: str) -> dict:
    """The JSON of schemas/avro/<name>.avsc."""
    return json.loads((SCHEMA_DIR / f"{name}.avsc").read_text())


def schema_fingerprint(parsed_schema: dict) -> bytes:
    """The 8-byte little-endian CRC-64-AVRO fingerprint of a parsed schema."""
    digest = fingerprint(to_parsing_canonical_form(parsed_schema), "CRC-64-AVRO")
    return struct.pack("<Q", int(digest, 16))


class AvroCodec:
    """Encodes records with one schema and decodes records written with it or any older known schema."""

    def __init__(self, schema: dict | str, older_writer_schemas: tuple[dict, ...] = ()):
        raw = load_schema(schema) if isinstance(schema, str) else schema
        self.schema = fastavro.parse_schema(raw)
        self.name = self.schema["name"]
        self.fingerprint = schema_fingerprint(self.schema)
        writers = [self.schema, *(fastavro.parse_schema(s) for s in older_writer_schemas)]
        self._writers = {schema_fingerprint(w): w for w in writers}

    def encode(self, record: dict) -> bytes:
        """One record as a single-object-encoded message."""
        buffer = io.BytesIO()
        buffer.write(_MARKER)
        buffer.write(self.fingerprint)
        fastavro.schemaless_writer(buffer, self.schema, record)
        return buffer.getvalue()

    def decode(self, message: bytes) -> dict:
        """The record in a message; DecodeError says what was wrong with a message that is not one."""
        body = self._body(message)
        record = self._read(body, message)
        if body.tell() != len(body.getbuffer()):
            raise DecodeError(f"{len(body.getbuffer()) - body.tell()} trailing bytes after a {self.name} record")
        return record

    def decode_all(self, message: bytes) -> list[dict]:
        """The records of a message that holds one or more single-object records back to back; DecodeError names
        the first that is not one."""
        body = self._body(message)
        records = []
        while body.tell() < len(body.getbuffer()):
            try:
                records.append(self._read(body, message))
            except DecodeError as error:
                raise DecodeError(f"record {len(records) + 1} of the message: {error}") from None
        return records

    def _body(self, message: bytes) -> io.BytesIO:
        if not isinstance(message, (bytes, bytearray, memoryview)):
            raise DecodeError(f"expected bytes, got {type(message).__name__}")
        return io.BytesIO(message)

    def _read(self, body: io.BytesIO, message: bytes) -> dict:
        """The single-object record at the body's position; the position moves past it."""
        start = body.tell()
        header = bytes(message[start:start + _HEADER_LEN])
        if len(header) < _HEADER_LEN or header[:2] != _MARKER:
            raise DecodeError(f"not an Avro single-object message ({len(message) - start} bytes, header "
                              f"{header[:2].hex()})")
        writer = self._writers.get(header[2:])
        if writer is None:
            raise DecodeError(f"unknown writer schema fingerprint {header[2:].hex()} for {self.name}")
        body.seek(start + _HEADER_LEN)
        try:
            return fastavro.schemaless_reader(body, writer, self.schema)
        except (EOFError, ValueError, TypeError, IndexError, KeyError, UnicodeDecodeError, struct.error) as error:
            raise DecodeError(f"corrupt {self.name} body: {type(error).__name__}: {error}") from error
