"""The page cache a folder's files hold: pages cached, dirty and under writeback, summed over the folder's files, from
the kernel's cachestat(2) (Linux 6.5+), which counts a file's pages without mapping it.

Reveal's data folder is read with it: what the embedded ClickHouse writes and merges, and what Reveal's commands read,
sits in the host's page cache, and the host's memory channels hold it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
from pathlib import Path
from typing import NamedTuple

# cachestat's number in the kernel's common syscall table (the same on x86-64 and arm64)
SYS_CACHESTAT = 451
PAGE_BYTES = os.sysconf("SC_PAGESIZE")


class _Range(ctypes.Structure):
    """struct cachestat_range: the bytes of the file to count; a length of 0 is to the file's end."""

    _fields_ = [("offset", ctypes.c_uint64), ("length", ctypes.c_uint64)]


class _Stat(ctypes.Structure):
    """struct cachestat (include/uapi/linux/mman.h), in pages."""

    _fields_ = [("cached", ctypes.c_uint64), ("dirty", ctypes.c_uint64), ("writeback", ctypes.c_uint64),
                ("evicted", ctypes.c_uint64), ("recently_evicted", ctypes.c_uint64)]


class CachedBytes(NamedTuple):
    """Bytes of page cache: all cached, and of those dirty and under writeback."""

    cached: int = 0
    dirty: int = 0
    writeback: int = 0

    def __add__(self, other):
        return CachedBytes(*(mine + theirs for mine, theirs in zip(self, other)))


_libc = ctypes.CDLL(None, use_errno=True)
_WHOLE_FILE = _Range(0, 0)


def file_page_cache(path: str | Path) -> CachedBytes:
    """The page cache one file holds; OSError when it cannot be opened or the kernel has no cachestat (ENOSYS)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        stat = _Stat()
        if _libc.syscall(SYS_CACHESTAT, descriptor, ctypes.byref(_WHOLE_FILE), ctypes.byref(stat), 0) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), str(path))
        return CachedBytes(stat.cached * PAGE_BYTES, stat.dirty * PAGE_BYTES, stat.writeback * PAGE_BYTES)
    finally:
        os.close(descriptor)


def counts_page_cache() -> bool:
    """Whether this kernel counts a file's page cache for us (cachestat exists and is allowed), tried on the
    interpreter's own file."""
    try:
        file_page_cache(os.path.realpath(sys.executable))
    except OSError:
        return False
    return True


def folder_page_cache(folder: str | Path) -> CachedBytes:
    """The page cache every regular file under `folder` holds. A file removed while the folder is walked counts as
    none (its pages went with it); a kernel without cachestat raises OSError(ENOSYS)."""
    total = CachedBytes()
    for directory, _, names in os.walk(folder):
        for name in names:
            try:
                total += file_page_cache(os.path.join(directory, name))
            except OSError as error:
                if error.errno == errno.ENOSYS:
                    raise
    return total
