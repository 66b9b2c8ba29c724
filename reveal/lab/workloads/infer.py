"""The `infer` workload: a server answering requests after a small compute, and a client sending them at a fixed
rate with periodic bursts and logging each one's latency."""

from __future__ import annotations

import socket
import struct
import threading
import time
from dataclasses import dataclass

import numpy as np

from reveal.lab.workloads.common import Endpoint, JsonLines, MatmulWork, Stop, now, say
from reveal.lab.workloads.errors import PeerClosed, PeerTimeout, ProtocolError, Stopped
from reveal.lab.workloads.transport import POLL_S, close_quietly, connect_with_retry, listen, recv_exactly

SEND_TIMEOUT_S = 30.0
MESSAGE = struct.Struct("!4sQI")
REQUEST_MAGIC = b"RVRQ"
RESPONSE_MAGIC = b"RVRS"


@dataclass(frozen=True)
class ServeSettings:
    listen: Endpoint
    response_kb: float = 16.0
    compute_ms: float = 5.0
    matrix_size: int = 128


@dataclass(frozen=True)
class ClientSettings:
    server: Endpoint
    rate: float = 20.0
    request_kb: float = 4.0
    burst_every: float = 10.0
    burst_s: float = 2.0
    burst_factor: float = 3.0
    connect_timeout: float = 30.0
    io_timeout: float = 30.0


def run_serve(settings: ServeSettings, stop: Stop, listener: socket.socket | None = None) -> None:
    """Answer requests on every connection, each in its own thread, until stopped."""
    work = MatmulWork.calibrated(settings.matrix_size, settings.compute_ms / 1e3)
    response = np.random.default_rng(1).bytes(int(settings.response_kb * 1024))
    listener = listener or listen(settings.listen)
    say(f"infer serve: {work.repeats} matmuls per request, {len(response)} response bytes")
    connections: set[socket.socket] = set()
    try:
        _accept_clients(listener, work, response, stop, connections)
    finally:
        for connection in list(connections):
            close_quietly(connection)
        listener.close()


def _accept_clients(listener: socket.socket, work: MatmulWork, response: bytes, stop: Stop,
                    connections: set[socket.socket]) -> None:
    listener.settimeout(POLL_S)
    while not stop():
        try:
            connection, address = listener.accept()
        except TimeoutError:
            continue
        connections.add(connection)
        client = f"client {address[0]}:{address[1]}"
        threading.Thread(target=_answer, args=(connection, client, work, response, stop, connections),
                         daemon=True).start()


def _answer(connection: socket.socket, client: str, work: MatmulWork, response: bytes, stop: Stop,
            connections: set[socket.socket]) -> None:
    """Answer one client's requests until it leaves, the server stops, or it breaks the protocol."""
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        while (request_id := _read_request(connection, client, stop)) is not None:
            work.run()
            connection.settimeout(SEND_TIMEOUT_S)
            connection.sendall(MESSAGE.pack(RESPONSE_MAGIC, request_id, len(response)) + response)
    except (Stopped, PeerClosed, OSError):
        pass
    except ProtocolError as error:
        say(f"infer serve: {error}")
    finally:
        connections.discard(connection)
        close_quietly(connection)


def _read_request(connection: socket.socket, client: str, stop: Stop) -> int | None:
    """The next request's id, its payload read and dropped; None when the client closed the connection."""
    header = recv_exactly(connection, MESSAGE.size, stop, peer=client)
    if header is None:
        return None
    magic, request_id, length = MESSAGE.unpack(header)
    if magic != REQUEST_MAGIC:
        raise ProtocolError(f"{client} sent {bytes(magic)!r}, not a request")
    if recv_exactly(connection, length, stop, peer=client) is None:
        raise PeerClosed(f"{client} closed the connection in the middle of a request")
    return request_id


def request_rate(elapsed_s: float, settings: ClientSettings) -> float:
    """Requests per second at `elapsed_s` into the run: the base rate, times `burst_factor` for `burst_s` at every
    multiple of `burst_every` (none at the start, so the run opens with the base rate)."""
    if settings.burst_every <= 0 or elapsed_s < settings.burst_every:
        return settings.rate
    in_burst = elapsed_s % settings.burst_every < settings.burst_s
    return settings.rate * settings.burst_factor if in_burst else settings.rate


def run_client(settings: ClientSettings, stop: Stop, log: JsonLines) -> None:
    """Send requests on one connection at `request_rate`, logging each one's latency. A slow server lowers the
    rate achieved instead of piling up requests."""
    payload = np.random.default_rng(2).bytes(int(settings.request_kb * 1024))
    connection = connect_with_retry(settings.server, settings.connect_timeout, stop, "the server")
    try:
        _request_loop(settings, connection, payload, stop, log)
    finally:
        close_quietly(connection)


def _request_loop(settings: ClientSettings, connection: socket.socket, payload: bytes, stop: Stop,
                  log: JsonLines) -> None:
    started = next_send = time.monotonic()
    request_id = 0
    while not stop.wait(next_send - time.monotonic()):
        rate = request_rate(next_send - started, settings)
        latency_s, response_bytes = _request(connection, request_id, payload, stop, settings)
        log.write({"workload": "infer", "request": request_id, "latency_s": round(latency_s, 6),
                   "burst": rate > settings.rate, "request_bytes": len(payload),
                   "response_bytes": response_bytes, "ts": now()})
        request_id += 1
        next_send = max(next_send + 1 / rate, time.monotonic())


def _request(connection: socket.socket, request_id: int, payload: bytes, stop: Stop,
             settings: ClientSettings) -> tuple[float, int]:
    """Send one request and wait for its answer: (latency in seconds, response payload bytes)."""
    sent = time.monotonic()
    connection.settimeout(settings.io_timeout)
    try:
        connection.sendall(MESSAGE.pack(REQUEST_MAGIC, request_id, len(payload)) + payload)
    except (BrokenPipeError, ConnectionResetError):
        raise PeerClosed("the server closed the connection") from None
    except TimeoutError:
        raise PeerTimeout("the server", settings.io_timeout) from None
    header = recv_exactly(connection, MESSAGE.size, stop, settings.io_timeout, "the server")
    if header is None:
        raise PeerClosed("the server closed the connection")
    magic, answered_id, length = MESSAGE.unpack(header)
    if magic != RESPONSE_MAGIC or answered_id != request_id:
        raise ProtocolError(f"the server answered {bytes(magic)!r} #{answered_id} to request #{request_id}")
    if recv_exactly(connection, length, stop, settings.io_timeout, "the server") is None and length:
        raise PeerClosed("the server closed the connection in the middle of a response")
    return time.monotonic() - sent, length
