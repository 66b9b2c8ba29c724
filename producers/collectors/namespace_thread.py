"""A worker thread inside another process's network namespace, and what it opened there: a socket made on that thread
answers for the namespace (ioctl, netlink), and /proc/sys/net follows the calling thread's namespace, so a collector
given /proc/PID reads the namespace of process PID from it (the lab's emulated hosts)."""

from __future__ import annotations

import ctypes
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Generic, Protocol, TypeVar

CLONE_NEWNET = 0x40000000

T = TypeVar("T")


class Closable(Protocol):
    """What a namespace thread opens: something holding a socket of the namespace, released by close()."""

    def close(self) -> None: ...


R = TypeVar("R", bound=Closable)


class NamespaceThread(Generic[R]):
    """One thread that has entered the network namespace of a /proc/PID/ns/net file and holds what `open_inside`
    made there; every read runs on it. The thread starts with the first read."""

    def __init__(self, namespace_file: Path, name: str, open_inside: Callable[[], R]):
        self.namespace_file = namespace_file
        self._open_inside = open_inside
        self._opened: R | None = None
        self._failure: OSError | None = None
        self._thread = ThreadPoolExecutor(1, name, initializer=self._enter)

    def run(self, read: Callable[[R], T]) -> T:
        """What `read` gives when called inside with what was opened there; OSError when entering or opening failed."""
        return self._thread.submit(self._run_inside, read).result()

    def close(self) -> None:
        """Close what was opened, on the thread that opened it, and end the thread; closing again does nothing."""
        opened, self._opened = self._opened, None
        if opened is not None:
            self._thread.submit(opened.close)
        self._thread.shutdown()

    def _enter(self) -> None:
        """Move the worker thread into the namespace and open there; a failure is kept and raised by every read."""
        try:
            enter_network_namespace(self.namespace_file)
            self._opened = self._open_inside()
        except OSError as error:
            self._failure = error

    def _run_inside(self, read: Callable[[R], T]) -> T:
        if self._failure is not None:
            raise self._failure
        return read(self._opened)


class OwnNamespace(Generic[R]):
    """The reader's own network namespace: what `open_here` makes, made on the first read on the calling thread."""

    def __init__(self, open_here: Callable[[], R]):
        self._open_here = open_here
        self._opened: R | None = None

    def run(self, read: Callable[[R], T]) -> T:
        """What `read` gives with what was opened; OSError while it cannot be opened."""
        if self._opened is None:
            self._opened = self._open_here()
        return read(self._opened)

    def close(self) -> None:
        opened, self._opened = self._opened, None
        if opened is not None:
            opened.close()


class NamespaceReader(Generic[R]):
    """Where a network collector reads: on a NamespaceThread when procfs is /proc/PID (it has ns/net), otherwise in
    the reader's own namespace, with what `open_here` makes (`open_inside` unless told). Nothing is opened and no
    thread started before the first read."""

    def __init__(self, procfs: Path, name: str, open_inside: Callable[[], R], open_here: Callable[[], R] | None = None):
        self.namespace_file = procfs / "ns/net"
        self._name = name
        self._open_inside = open_inside
        self._open_here = open_here or open_inside
        self._reader: NamespaceThread[R] | OwnNamespace[R] | None = None

    def run(self, read: Callable[[R], T]) -> T:
        """What `read` gives with what was opened, inside the namespace or here."""
        if self._reader is None:
            self._reader = self._place()
        return self._reader.run(read)

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()

    def _place(self) -> NamespaceThread[R] | OwnNamespace[R]:
        if self.namespace_file.exists():
            return NamespaceThread(self.namespace_file, self._name, self._open_inside)
        return OwnNamespace(self._open_here)


def enter_network_namespace(namespace_file: Path) -> None:
    """Move the calling thread into the network namespace of a /proc/PID/ns/net file (Python 3.11 has no os.setns)."""
    descriptor = os.open(namespace_file, os.O_RDONLY)
    try:
        if ctypes.CDLL(None, use_errno=True).setns(descriptor, CLONE_NEWNET) != 0:
            code = ctypes.get_errno()
            raise OSError(code, f"cannot enter the network namespace of {namespace_file}: {os.strerror(code)} "
                                "(entering another namespace needs CAP_SYS_ADMIN)")
    finally:
        os.close(descriptor)
