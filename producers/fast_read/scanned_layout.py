"""A token layout applied by the compiled scanner (`_tokenscan.c`): one C call per file per tick reads and converts."""

from __future__ import annotations

import numpy as np

from producers.fast_read.token_layout import TokenLayout

try:
    from producers.fast_read import _tokenscan
except ImportError:  # built by `pip install`; without it the same layouts are read in Python, only slower
    _tokenscan = None


def scanner_available() -> bool:
    """Whether the compiled scanner was built on this host."""
    return _tokenscan is not None


def new_batch():
    """An empty ScanBatch (the scanned files of many sources read in one call a tick), or None without the scanner."""
    return _tokenscan.ScanBatch() if _tokenscan is not None else None


class ScannedLayout:
    """A TokenLayout applied by the compiled scanner: one call reads the file, checks the labels and fills the values.

    `values()` returns None when the scanner cannot vouch for the result (labels or token count changed, a value is
    not a plain number, the file outgrew the buffer); the caller then parses `text()` in Python as before.
    """

    def __init__(self, layout: TokenLayout, data: bytes, read_size: int, slots: list[int] | None = None,
                 adds: list[bool] | None = None):
        """By default value i of the layout is channel i; `slots` sends it to another channel, and where `adds`
        says so it is added there (several tokens summed into one channel, as per-CPU totals are)."""
        order = np.argsort(layout.value_positions, kind="stable")
        self.names = layout.names
        self._wanted = np.asarray(layout.value_positions, dtype=np.int32)[order]
        self._slots = (order if slots is None else np.asarray(slots)[order]).astype(np.int32)
        self._adds = None if adds is None else np.asarray(adds, dtype=np.uint8)[order]
        self._scales = None if layout.scales is None else np.asarray(layout.scales, dtype=np.float64)[order]
        self._labels = np.asarray(sorted(layout.label_positions), dtype=np.int32)
        self._base = layout.base
        self._out = np.empty(len(self.names))
        self._buffer = bytearray(max(read_size, len(data) + 1))
        self._buffer[:len(data)] = data
        _, self._tokens, self._label_hash, _ = self._scan(-1, len(data))
        self._length = 0

    @property
    def read_size(self) -> int:
        return len(self._buffer)

    def values(self, fd: int) -> np.ndarray | None:
        self._length, tokens, label_hash, ok = self._scan(fd, 0)
        if ok and tokens == self._tokens and label_hash == self._label_hash:
            return self._out.copy()
        return None

    def text(self) -> bytes | None:
        """The bytes of the last read, unless they filled the buffer (the file may be longer)."""
        return bytes(self._buffer[:self._length]) if self._length < len(self._buffer) else None

    def put_into(self, batch, index: int, fd: int, offset: int, every: int, budget_ns: int) -> None:
        """Make entry `index` of a ScanBatch read this layout's file into frame[offset:] at ticks divisible by every."""
        batch.put(index, fd, len(self._buffer), self._wanted, self._slots, self._scales, self._labels, self._base,
                  self._tokens, self._label_hash, offset, every, budget_ns, self._adds)

    def _scan(self, fd: int, length: int) -> tuple[int, int, int, int]:
        return _tokenscan.scan(fd, self._buffer, length, self._wanted, self._slots, self._out, self._scales,
                               self._labels, self._base, self._adds)
