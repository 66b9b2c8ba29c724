"""A bounded on-disk queue of Kafka records, kept while the broker is unreachable and replayed in order after.

Records are appended to segment files as [crc32][topic length][key length][value length][topic][key][value]. A
fully replayed segment is deleted; when the spool would exceed its size, the oldest segment is dropped and counted
(the frames' sequence numbers then show downstream exactly what was lost). Segments left by an earlier run are
replayed first.
"""

from __future__ import annotations

import logging
import struct
import threading
import zlib
from collections import deque
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

_HEADER = struct.Struct("<IHHI")


@dataclass(frozen=True)
class SpooledRecord:
    topic: str
    key: bytes
    value: bytes


class DiskSpool:
    """Append at the tail, read and release from the head; thread-safe; bounded by max_bytes."""

    def __init__(self, directory: str | Path, max_bytes: int = 256 << 20, segment_bytes: int = 8 << 20):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.max_bytes, self.segment_bytes = max_bytes, segment_bytes
        self.dropped_records = 0
        self._lock = threading.Lock()
        self._segments: deque[Path] = deque(sorted(self.directory.glob("*.spool")))
        self._head: deque[SpooledRecord] = deque()
        self._bytes = sum(p.stat().st_size for p in self._segments)
        self._records = sum(self._count(p) for p in self._segments)
        self._tail_handle = None
        if self._records:
            log.info("spool %s holds %d records from an earlier run; they are replayed first", self.directory,
                     self._records)

    def __len__(self) -> int:
        with self._lock:
            return self._records

    @property
    def size_bytes(self) -> int:
        with self._lock:
            return self._bytes

    def append(self, record: SpooledRecord) -> None:
        topic = record.topic.encode()
        payload = topic + record.key + record.value
        blob = _HEADER.pack(zlib.crc32(payload), len(topic), len(record.key), len(record.value)) + payload
        with self._lock:
            handle = self._tail(len(blob))
            handle.write(blob)
            handle.flush()
            self._bytes += len(blob)
            self._records += 1
            self._enforce_bound()

    def peek(self, limit: int) -> list[SpooledRecord]:
        """Up to `limit` records from the head, oldest first, without removing them."""
        with self._lock:
            while len(self._head) < limit and self._load_head_segment():
                pass
            return list(self._head)[:limit]

    def release(self, count: int) -> None:
        """Forget the `count` oldest records: they have been delivered."""
        with self._lock:
            for _ in range(min(count, len(self._head))):
                self._head.popleft()
                self._records -= 1

    def close(self) -> None:
        with self._lock:
            if self._tail_handle is not None:
                self._tail_handle.close()
                self._tail_handle = None

    def _tail(self, incoming: int):
        if self._tail_handle is None or self._tail_handle.tell() + incoming > self.segment_bytes:
            if self._tail_handle is not None:
                self._tail_handle.close()
            number = int(self._segments[-1].stem) + 1 if self._segments else 0
            path = self.directory / f"{number:020d}.spool"
            self._segments.append(path)
            self._tail_handle = open(path, "ab")
        return self._tail_handle

    def _load_head_segment(self) -> bool:
        """Move the oldest closed segment into memory (deleting its file); False when none is left to load."""
        if not self._segments:
            return False
        path = self._segments[0]
        if self._tail_handle is not None and Path(self._tail_handle.name) == path:
            self._tail_handle.close()
            self._tail_handle = None
        self._segments.popleft()
        data = path.read_bytes()
        self._head.extend(self._decode(data, path))
        self._bytes -= len(data)
        path.unlink()
        return True

    def _enforce_bound(self) -> None:
        while self._bytes > self.max_bytes and len(self._segments) > 1:
            oldest = self._segments.popleft()
            lost = self._count(oldest)
            self._bytes -= oldest.stat().st_size
            self._records -= lost
            self.dropped_records += lost
            oldest.unlink()
            log.error("spool full (%d bytes): dropped %d oldest records", self.max_bytes, lost)

    def _count(self, path: Path) -> int:
        return sum(1 for _ in self._decode(path.read_bytes(), path))

    @staticmethod
    def _decode(data: bytes, path: Path):
        offset = 0
        while offset + _HEADER.size <= len(data):
            crc, topic_len, key_len, value_len = _HEADER.unpack_from(data, offset)
            start = offset + _HEADER.size
            end = start + topic_len + key_len + value_len
            payload = data[start:end]
            if end > len(data) or zlib.crc32(payload) != crc:
                log.error("spool segment %s is damaged at byte %d; the rest of it is skipped", path.name, offset)
                return
            yield SpooledRecord(payload[:topic_len].decode(), payload[topic_len:topic_len + key_len],
                                payload[topic_len + key_len:])
            offset = end
