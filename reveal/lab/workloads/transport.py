"""TCP between workloads: listening, connecting while the peer is not up yet, and reading whole messages, each
wait polling the stop so a stop is noticed within `POLL_S`."""

from __future__ import annotations

import socket
import time

from reveal.lab.workloads.common import Endpoint, Stop
from reveal.lab.workloads.errors import PeerClosed, PeerTimeout, PeerUnreachable, Stopped, WorkloadError

POLL_S = 0.2


def listen(endpoint: Endpoint) -> socket.socket:
    """A listening TCP socket on `endpoint` (port 0 picks a free one)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(tuple(endpoint))
    except OSError as error:
        listener.close()
        raise WorkloadError(f"cannot listen on {endpoint}: {error.strerror or error}") from None
    listener.listen(16)
    return listener


def connect_with_retry(endpoint: Endpoint, timeout_s: float, stop: Stop, name: str = "") -> socket.socket:
    """Connect to `endpoint`, retrying with backoff while it is not up yet, for at most `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    backoff_s, reason = 0.05, "no attempt"
    while not stop():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            connection = socket.create_connection(tuple(endpoint), timeout=min(remaining, 2.0))
        except OSError as error:
            reason = error.strerror or str(error)
            stop.wait(min(backoff_s, max(deadline - time.monotonic(), 0)))
            backoff_s = min(backoff_s * 2, 0.5)
            continue
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection
    if stop():
        raise Stopped(f"stopped while connecting to {name or endpoint}")
    raise PeerUnreachable(f"{name} at {endpoint}" if name else str(endpoint), timeout_s, reason)


def recv_exactly(sock: socket.socket, size: int, stop: Stop, idle_timeout_s: float | None = None,
                 peer: str = "peer") -> bytearray | None:
    """`size` bytes from a blocking socket, polling `stop` while waiting; None when the peer closed the connection
    before the first byte."""
    buffer = bytearray(size)
    view, received = memoryview(buffer), 0
    sock.settimeout(POLL_S)
    last_progress = time.monotonic()
    while received < size:
        if stop():
            raise Stopped(f"stopped while waiting on {peer}")
        try:
            count = sock.recv_into(view[received:])
        except TimeoutError:
            if idle_timeout_s and time.monotonic() - last_progress > idle_timeout_s:
                raise PeerTimeout(peer, idle_timeout_s) from None
            continue
        except ConnectionResetError:
            count = 0
        if count == 0:
            if received == 0:
                return None
            raise PeerClosed(f"{peer} closed the connection in the middle of a message")
        received, last_progress = received + count, time.monotonic()
    return buffer


def close_quietly(sock: socket.socket | None) -> None:
    """Shut down and close, waking any thread blocked on the socket; errors mean it is already gone."""
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
