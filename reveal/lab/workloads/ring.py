"""The ring allreduce of data-parallel training over TCP: each rank connects to its two neighbours, then sums a
float32 vector over all ranks by reduce-scatter and all-gather."""

from __future__ import annotations

import selectors
import socket
import struct
import time
from dataclasses import dataclass

import numpy as np

from reveal.lab.workloads.common import Endpoint, Stop
from reveal.lab.workloads.errors import PeerClosed, PeerTimeout, PeerUnreachable, ProtocolError, Stopped
from reveal.lab.workloads.transport import POLL_S, close_quietly, connect_with_retry, recv_exactly

HELLO = struct.Struct("!4sI")
HELLO_MAGIC = b"RVRG"


@dataclass
class RingLinks:
    """One rank's two connections in the ring: it sends to the next rank and receives from the previous one."""

    rank: int
    world: int
    to_next: socket.socket
    from_previous: socket.socket

    def close(self) -> None:
        close_quietly(self.to_next)
        close_quietly(self.from_previous)


def connect_ring(rank: int, peers: list[Endpoint], listener: socket.socket, timeout_s: float,
                 stop: Stop) -> RingLinks:
    """Connect rank `rank` to its ring neighbours; `listener` listens on peers[rank]. Peers may start a few seconds
    apart: connecting retries until `timeout_s`, and the previous rank's connection waits in the listen backlog."""
    world = len(peers)
    following, preceding = (rank + 1) % world, (rank - 1) % world
    deadline = time.monotonic() + timeout_s
    to_next = connect_with_retry(peers[following], timeout_s, stop, f"rank {following}")
    try:
        to_next.settimeout(POLL_S * 10)
        to_next.sendall(HELLO.pack(HELLO_MAGIC, rank))
        from_previous = _accept_rank(listener, preceding, peers[preceding], deadline, stop, timeout_s)
    except BaseException:
        close_quietly(to_next)
        raise
    for connection in (to_next, from_previous):
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection.setblocking(False)
    return RingLinks(rank, world, to_next, from_previous)


def _accept_rank(listener: socket.socket, expected: int, endpoint: Endpoint, deadline: float, stop: Stop,
                 timeout_s: float) -> socket.socket:
    """Accept the previous rank's connection, checking its hello, before `deadline`."""
    listener.settimeout(POLL_S)
    while time.monotonic() < deadline:
        if stop():
            raise Stopped(f"stopped while waiting for rank {expected}")
        try:
            connection, _ = listener.accept()
        except TimeoutError:
            continue
        hello = recv_exactly(connection, HELLO.size, stop, max(deadline - time.monotonic(), POLL_S), f"rank {expected}")
        magic, rank = HELLO.unpack(hello) if hello else (b"", -1)
        if magic == HELLO_MAGIC and rank == expected:
            return connection
        close_quietly(connection)
        raise ProtocolError(f"expected rank {expected} ({endpoint}) to connect, got hello {bytes(hello or b'')!r}")
    raise PeerUnreachable(f"rank {expected} at {endpoint}", timeout_s, "it never connected to this rank")


def ring_allreduce(vector: np.ndarray, links: RingLinks, stop: Stop | None = None,
                   timeout_s: float = 30.0) -> np.ndarray:
    """The sum of `vector` over all ranks, as float32, by reduce-scatter then all-gather around the ring (each rank
    sends 2·(N−1)/N of the vector). Every rank must pass a vector of the same length; `vector` is not changed."""
    result = np.array(vector, dtype=np.float32).reshape(-1)
    world, rank = links.world, links.rank
    chunks = np.array_split(result, world)
    scratch = np.empty(max(len(chunk) for chunk in chunks), dtype=np.float32)
    stop = stop or Stop()
    for step in range(world - 1):
        send, receive = (rank - step) % world, (rank - step - 1) % world
        incoming = scratch[:len(chunks[receive])]
        _exchange(links, _bytes_of(chunks[send]), _bytes_of(incoming), stop, timeout_s)
        chunks[receive] += incoming
    for step in range(world - 1):
        send, receive = (rank + 1 - step) % world, (rank - step) % world
        _exchange(links, _bytes_of(chunks[send]), _bytes_of(chunks[receive]), stop, timeout_s)
    return result.reshape(np.shape(vector))


def _bytes_of(array: np.ndarray) -> memoryview:
    return memoryview(array).cast("B")


def _exchange(links: RingLinks, outgoing: memoryview, incoming: memoryview, stop: Stop, timeout_s: float) -> None:
    """Send `outgoing` to the next rank while filling `incoming` from the previous one. Both at once: every rank
    sends before it receives, so a blocking send of a chunk larger than the socket buffers would stall the ring."""
    sent = received = 0
    with selectors.DefaultSelector() as selector:
        if len(outgoing):
            selector.register(links.to_next, selectors.EVENT_WRITE)
        if len(incoming):
            selector.register(links.from_previous, selectors.EVENT_READ)
        last_progress = time.monotonic()
        while sent < len(outgoing) or received < len(incoming):
            ready = selector.select(POLL_S)
            if stop():
                raise Stopped("stopped during an allreduce")
            if not ready and time.monotonic() - last_progress > timeout_s:
                raise PeerTimeout(f"rank {(links.rank + 1) % links.world} or {(links.rank - 1) % links.world}",
                                  timeout_s)
            for key, _ in ready:
                if key.fileobj is links.to_next:
                    sent += _send_some(links.to_next, outgoing[sent:])
                    if sent == len(outgoing):
                        selector.unregister(links.to_next)
                else:
                    received += _receive_some(links, incoming[received:])
                    if received == len(incoming):
                        selector.unregister(links.from_previous)
            last_progress = time.monotonic() if ready else last_progress


def _send_some(sock: socket.socket, data: memoryview) -> int:
    try:
        return sock.send(data)
    except BlockingIOError:
        return 0
    except (BrokenPipeError, ConnectionResetError) as error:
        raise PeerClosed(f"the next rank closed the ring ({error.strerror})") from None


def _receive_some(links: RingLinks, into: memoryview) -> int:
    try:
        count = links.from_previous.recv_into(into)
    except BlockingIOError:
        return 0
    except ConnectionResetError:
        count = 0
    if count == 0:
        raise PeerClosed(f"rank {(links.rank - 1) % links.world} closed the ring")
    return count
