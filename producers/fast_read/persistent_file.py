"""A kernel file kept open and re-read with pread, so a tick costs one system call rather than open/read/close."""

from __future__ import annotations

import os
import weakref
from pathlib import Path


class PersistentFile:
    """A file kept open and re-read from offset 0 with pread: procfs and sysfs regenerate it on each read.

    The read size follows the file's size (a larger buffer costs an allocation on every read). A file dropped
    without close() is closed when it is collected, so a collector that forgets one does not leak descriptors.
    """

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None
        self._closer: weakref.finalize | None = None
        self._size = 4096

    @property
    def size(self) -> int:
        """The read size that holds the whole file, as far as reads have shown."""
        return self._size

    def fileno(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            self._closer = weakref.finalize(self, os.close, self._fd)
        return self._fd

    def read(self) -> bytes:
        fd = self.fileno()
        try:
            data = os.pread(fd, self._size, 0)
            while len(data) >= self._size:  # the file outgrew the buffer: read it again, whole
                self._size *= 4
                data = os.pread(fd, self._size, 0)
        except OSError:
            self.close()
            raise
        self._size = max(4096, 2 * len(data))
        return data

    def close(self) -> None:
        if self._closer is not None:
            self._closer()
            self._closer = None
        self._fd = None
