"""ML-like workloads for the lab's emulated hosts: data-parallel training with a ring allreduce over TCP (`train`),
an inference request loop with periodic bursts (`infer`) and an input pipeline that reads from storage (`input`).

Each alternates phases periodically, as ML jobs do (paper §3), is bounded by --duration, stops cleanly on SIGTERM or
SIGINT, talks only to the addresses on its command line and writes one JSON line per step or request. Run
`python -m stream_jobs.lab.workloads KIND --help` for the options.
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import signal
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import NamedTuple

# One BLAS thread per process, like one accelerator per host: the lab packs several hosts onto a couple of cores,
# and OpenBLAS would otherwise spread each matmul over all of them and spin between calls. Set before numpy loads.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np

POLL_S = 0.2
SEND_TIMEOUT_S = 30.0
MIB = 1 << 20
HELLO = struct.Struct("!4sI")
HELLO_MAGIC = b"RVRG"
MESSAGE = struct.Struct("!4sQI")
REQUEST_MAGIC = b"RVRQ"
RESPONSE_MAGIC = b"RVRS"


# ---------------------------------------------------------------------------------------------------- errors


class WorkloadError(Exception):
    """The workload cannot go on: a peer unreachable, silent, or speaking another protocol."""


class PeerUnreachable(WorkloadError):
    def __init__(self, peer: str, waited_s: float, reason: str):
        super().__init__(f"{peer} was not reachable within {waited_s:g} s ({reason})")
        self.peer = peer


class PeerTimeout(WorkloadError):
    def __init__(self, peer: str, waited_s: float):
        super().__init__(f"{peer} sent or took nothing for {waited_s:g} s")
        self.peer = peer


class ProtocolError(WorkloadError):
    pass


class PeerClosed(Exception):
    """The other side closed its connection: the job is ending there, so it ends here too."""


class Stopped(Exception):
    """A stop was requested while waiting on a peer."""


# ---------------------------------------------------------------------------------------------------- shared parts


class Endpoint(NamedTuple):
    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Endpoint:
        """'10.251.0.11:29500' → Endpoint('10.251.0.11', 29500)."""
        host, sep, port = text.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{text!r} is not ADDR:PORT (example: 10.251.0.11:29500)")
        return cls(host, int(port))

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"

    __repr__ = __str__


class Stop:
    """Set by SIGTERM/SIGINT, by `set()`, or when the duration runs out; loops poll it and sleep on it, so a stop
    is noticed within one poll."""

    def __init__(self, duration_s: float | None = None):
        self._event = threading.Event()
        self._deadline = time.monotonic() + duration_s if duration_s else None

    def install_signal_handlers(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: self._event.set())

    def set(self) -> None:
        self._event.set()

    def __call__(self) -> bool:
        if self._deadline is not None and time.monotonic() >= self._deadline:
            self._event.set()
        return self._event.is_set()

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`, less when stopped or at the deadline; True when stopped."""
        if self._deadline is not None:
            seconds = min(seconds, self._deadline - time.monotonic())
        if seconds > 0:
            self._event.wait(seconds)
        return self()


class JsonLines:
    """One JSON object per line to a file (appended, so a restarted workload keeps earlier lines) or stdout."""

    def __init__(self, path: str | None = None):
        self._file = open(path, "a", buffering=1) if path else sys.stdout

    def write(self, record: dict) -> None:
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not sys.stdout:
            self._file.close()


class MatmulWork:
    """A fixed amount of compute: `repeats` float32 matmuls of `size`×`size`. Fixed work, not fixed time, so CPU
    contention shows as a longer compute phase, as it would on a real host."""

    def __init__(self, size: int, repeats: int, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.left = rng.standard_normal((size, size), dtype=np.float32)
        self.right = rng.standard_normal((size, size), dtype=np.float32) / np.float32(np.sqrt(size))
        self.repeats = repeats

    @classmethod
    def calibrated(cls, size: int, target_s: float, seed: int = 0) -> MatmulWork:
        """As many matmuls as take about `target_s` on this machine now (none for a target of zero)."""
        work = cls(size, 1, seed)
        _run_for(work.run, 0.05)
        runs, elapsed_s = _run_for(work.run, 0.1)
        work.repeats = round(target_s * runs / elapsed_s) if target_s > 0 else 0
        return work

    def run(self) -> float:
        """Do the matmuls; the checksum of the last keeps the work from being optimised away."""
        product = None
        for _ in range(self.repeats):
            product = self.left @ self.right
        return float(product[0, 0]) if product is not None else 0.0


def _run_for(function, seconds: float) -> tuple[int, float]:
    """Call `function` repeatedly for about `seconds`: (calls, seconds taken)."""
    started = time.perf_counter()
    runs = 0
    while (elapsed_s := time.perf_counter() - started) < seconds:
        function()
        runs += 1
    return runs, elapsed_s


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


def _close_quietly(sock: socket.socket | None) -> None:
    """Shut down and close, waking any thread blocked on the socket; errors mean it is already gone."""
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


def _now() -> float:
    return round(time.time(), 6)


# ---------------------------------------------------------------------------------------------------- train


@dataclass
class RingLinks:
    """One rank's two connections in the ring: it sends to the next rank and receives from the previous one."""

    rank: int
    world: int
    to_next: socket.socket
    from_previous: socket.socket

    def close(self) -> None:
        _close_quietly(self.to_next)
        _close_quietly(self.from_previous)


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
        _close_quietly(to_next)
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
        _close_quietly(connection)
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


@dataclass(frozen=True)
class TrainSettings:
    rank: int
    peers: tuple[Endpoint, ...]
    gradient_mb: float = 4.0
    compute_ms: float = 80.0
    matrix_size: int = 256
    accelerator_ms: float = 400.0
    connect_timeout: float = 30.0
    io_timeout: float = 30.0


def run_train(settings: TrainSettings, stop: Stop, log: JsonLines) -> None:
    """Training steps: a compute phase (CPU matmuls, then a wait standing for accelerator kernels the host CPU does
    not see), then a ring allreduce of the gradient. No slack between steps, so a slower phase means a slower step."""
    work = MatmulWork.calibrated(settings.matrix_size, settings.compute_ms / 1e3, seed=settings.rank)
    gradient = np.random.default_rng(settings.rank).standard_normal(int(settings.gradient_mb * MIB) // 4,
                                                                   dtype=np.float32)
    _say(f"train: rank {settings.rank} of {len(settings.peers)}, {work.repeats} matmuls per step, "
         f"{gradient.nbytes} gradient bytes")
    with listen(settings.peers[settings.rank]) as listener:
        links = connect_ring(settings.rank, list(settings.peers), listener, settings.connect_timeout, stop)
    try:
        _train_steps(settings, work, gradient, links, stop, log)
    finally:
        links.close()


def _train_steps(settings: TrainSettings, work: MatmulWork, gradient: np.ndarray, links: RingLinks, stop: Stop,
                 log: JsonLines) -> None:
    step = 0
    while not stop():
        started = time.monotonic()
        work.run()
        if stop.wait(settings.accelerator_ms / 1e3):
            break
        computed = time.monotonic()
        ring_allreduce(gradient, links, stop, settings.io_timeout)
        finished = time.monotonic()
        log.write({"workload": "train", "rank": settings.rank, "step": step, "compute_s": round(computed - started, 6),
                   "allreduce_s": round(finished - computed, 6), "step_s": round(finished - started, 6),
                   "ts": _now()})
        step += 1


# ---------------------------------------------------------------------------------------------------- infer


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
    _say(f"infer serve: {work.repeats} matmuls per request, {len(response)} response bytes")
    connections: set[socket.socket] = set()
    try:
        _accept_clients(listener, work, response, stop, connections)
    finally:
        for connection in list(connections):
            _close_quietly(connection)
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
        _say(f"infer serve: {error}")
    finally:
        connections.discard(connection)
        _close_quietly(connection)


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
        _close_quietly(connection)


def _request_loop(settings: ClientSettings, connection: socket.socket, payload: bytes, stop: Stop,
                  log: JsonLines) -> None:
    started = next_send = time.monotonic()
    request_id = 0
    while not stop.wait(next_send - time.monotonic()):
        rate = request_rate(next_send - started, settings)
        latency_s, response_bytes = _request(connection, request_id, payload, stop, settings)
        log.write({"workload": "infer", "request": request_id, "latency_s": round(latency_s, 6),
                   "burst": rate > settings.rate, "request_bytes": len(payload),
                   "response_bytes": response_bytes, "ts": _now()})
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


# ---------------------------------------------------------------------------------------------------- input


@dataclass(frozen=True)
class InputSettings:
    data_dir: Path
    files: int = 32
    file_mb: float = 4.0
    batch_files: int = 4
    compute_ms: float = 100.0
    matrix_size: int = 256
    step_ms: float = 1000.0


def ensure_files(data_dir: Path, count: int, size_bytes: int) -> list[Path]:
    """The data set's files, created once: a file of the right size is kept, so restarts reuse it."""
    data_dir.mkdir(parents=True, exist_ok=True)
    paths = [data_dir / f"shard-{index:05d}.bin" for index in range(count)]
    for index, path in enumerate(paths):
        if not (path.exists() and path.stat().st_size == size_bytes):
            _write_shard(path, size_bytes, seed=index)
    return paths


def _write_shard(path: Path, size_bytes: int, seed: int) -> None:
    """Write random bytes beside `path`, flush them to storage and out of the page cache, then rename into place, so
    a half-written file never passes for a shard."""
    rng = np.random.default_rng(seed)
    partial = path.with_suffix(".partial")
    with open(partial, "wb") as file:
        for offset in range(0, size_bytes, MIB):
            file.write(rng.bytes(min(MIB, size_bytes - offset)))
        file.flush()
        os.fsync(file.fileno())
        _drop_from_page_cache(file.fileno())
    partial.rename(path)


def _drop_from_page_cache(fd: int) -> None:
    # posix_fadvise is missing on macOS; there the reads may be served from the page cache.
    if hasattr(os, "posix_fadvise"):
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def read_uncached(path: Path, buffer: memoryview) -> int:
    """Read `path` into `buffer` with plain reads, then drop it from the page cache so the next read of it goes to
    storage again. Returns the bytes read."""
    total = 0
    with open(path, "rb", buffering=0) as file:
        while total < len(buffer) and (count := file.readinto(buffer[total:])):
            total += count
        _drop_from_page_cache(file.fileno())
    return total


def run_input(settings: InputSettings, stop: Stop, log: JsonLines) -> None:
    """Steps of reading a batch of files then a small compute on it, one every `step_ms` at most, cycling through
    the data set."""
    size_bytes = int(settings.file_mb * MIB)
    paths = ensure_files(settings.data_dir, settings.files, size_bytes)
    work = MatmulWork.calibrated(settings.matrix_size, settings.compute_ms / 1e3)
    buffer = memoryview(bytearray(size_bytes))
    _say(f"input: {len(paths)} files of {size_bytes} bytes in {settings.data_dir}, {work.repeats} matmuls per step")
    step = 0
    while not stop():
        started = time.monotonic()
        batch = [paths[(step * settings.batch_files + i) % len(paths)] for i in range(settings.batch_files)]
        read_bytes = sum(read_uncached(path, buffer) for path in batch)
        read = time.monotonic()
        work.run()
        finished = time.monotonic()
        log.write({"workload": "input", "step": step, "files": len(batch), "bytes": read_bytes,
                   "read_s": round(read - started, 6), "compute_s": round(finished - read, 6),
                   "step_s": round(finished - started, 6), "ts": _now()})
        step += 1
        stop.wait(settings.step_ms / 1e3 - (finished - started))


# ---------------------------------------------------------------------------------------------------- command line


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _endpoint(text: str) -> Endpoint:
    try:
        return Endpoint.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _endpoints(text: str) -> tuple[Endpoint, ...]:
    return tuple(_endpoint(part) for part in text.split(",") if part.strip())


def _positive(kind):
    def parse(text: str):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r} must be more than zero")
        return value
    return parse


def _not_negative(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must not be negative")
    return value


def _add_common(parser: argparse.ArgumentParser, logs: bool = True) -> None:
    parser.add_argument("--duration", type=_positive(float), default=60.0, metavar="S",
                        help="stop after this many seconds (default: 60)")
    if logs:
        parser.add_argument("--log", default=None, metavar="FILE",
                            help="append JSON lines here (default: stdout)")


def _add_compute(parser: argparse.ArgumentParser, compute_ms: float, matrix_size: int, what: str) -> None:
    parser.add_argument("--compute-ms", type=_not_negative, default=compute_ms, metavar="MS",
                        help=f"CPU compute per {what}, as matmuls calibrated at start to take about this long "
                             f"(default: {compute_ms:g}); contention then lengthens it")
    parser.add_argument("--matrix-size", type=_positive(int), default=matrix_size, metavar="N",
                        help=f"side of the float32 matrices multiplied (default: {matrix_size})")


def _add_train(commands) -> None:
    parser = commands.add_parser(
        "train", help="data-parallel training: compute, then a ring allreduce with the other ranks",
        description="One rank of data-parallel training. Each step runs matmuls, then sums a float32 gradient over "
                    "all ranks by a ring allreduce (reduce-scatter + all-gather) over TCP. Each step: matmuls "
                    "(--compute-ms), a wait standing for accelerator kernels (--accelerator-ms), then the allreduce. "
                    "Logs one JSON line per step: workload, rank, step, compute_s (matmuls + accelerator wait), "
                    "allreduce_s, step_s (their sum), ts (Unix seconds).")
    parser.add_argument("--rank", type=int, required=True, help="this process's rank, an index into --peers")
    parser.add_argument("--peers", type=_endpoints, required=True, metavar="ADDR:PORT,…",
                        help="every rank's address in rank order; this rank listens on its own entry")
    parser.add_argument("--gradient-mb", type=_positive(float), default=4.0, metavar="MB",
                        help="size of the gradient summed each step, in MiB (default: 4)")
    _add_compute(parser, 80.0, 256, "step")
    parser.add_argument("--accelerator-ms", type=_not_negative, default=400.0, metavar="MS",
                        help="idle wait per step standing for accelerator kernels, which the host CPU does not see "
                             "(default: 400)")
    parser.add_argument("--connect-timeout", type=_positive(float), default=30.0, metavar="S",
                        help="how long to wait for the neighbouring ranks to come up (default: 30)")
    parser.add_argument("--io-timeout", type=_positive(float), default=30.0, metavar="S",
                        help="give up when the ring makes no progress for this long (default: 30)")
    _add_common(parser)
    parser.set_defaults(settings=TrainSettings, run=run_train)


def _add_infer(commands) -> None:
    parser = commands.add_parser("infer", help="inference: a server answering requests, and a client sending them",
                                 description="An inference request loop over TCP: `serve` on one host, `client` on "
                                             "another.")
    roles = parser.add_subparsers(dest="role", required=True, metavar="ROLE")
    serve = roles.add_parser("serve", help="answer requests",
                             description="Answer each request (header + payload) with a payload of --response-kb "
                                         "after a small compute. Logs nothing but its start line on stderr.")
    serve.add_argument("--listen", type=_endpoint, required=True, metavar="ADDR:PORT", help="address to listen on")
    serve.add_argument("--response-kb", type=_not_negative, default=16.0, metavar="KB",
                       help="response payload in KiB (default: 16)")
    _add_compute(serve, 5.0, 128, "request")
    _add_common(serve, logs=False)
    serve.set_defaults(settings=ServeSettings, run=lambda settings, stop, log: run_serve(settings, stop))
    client = roles.add_parser(
        "client", help="send requests at a fixed rate with periodic bursts",
        description="Send requests on one connection at --rate per second, --burst-factor times that for --burst-s "
                    "every --burst-every seconds. Logs one JSON line per request: workload, request, latency_s, "
                    "burst, request_bytes, response_bytes, ts (Unix seconds).")
    client.add_argument("--server", type=_endpoint, required=True, metavar="ADDR:PORT", help="the server's address")
    client.add_argument("--rate", type=_positive(float), default=20.0, metavar="R",
                        help="requests per second outside bursts (default: 20)")
    client.add_argument("--request-kb", type=_not_negative, default=4.0, metavar="KB",
                        help="request payload in KiB (default: 4)")
    client.add_argument("--burst-every", type=_not_negative, default=10.0, metavar="S",
                        help="seconds between burst starts; 0 for none (default: 10)")
    client.add_argument("--burst-s", type=_not_negative, default=2.0, metavar="S",
                        help="length of each burst (default: 2)")
    client.add_argument("--burst-factor", type=_positive(float), default=3.0, metavar="X",
                        help="rate multiplier during a burst (default: 3)")
    client.add_argument("--connect-timeout", type=_positive(float), default=30.0, metavar="S",
                        help="how long to wait for the server to come up (default: 30)")
    client.add_argument("--io-timeout", type=_positive(float), default=30.0, metavar="S",
                        help="give up on a request unanswered this long (default: 30)")
    _add_common(client)
    client.set_defaults(settings=ClientSettings, run=run_client)


def _add_input(commands) -> None:
    parser = commands.add_parser(
        "input", help="input pipeline: read batches of files from storage, then compute",
        description="Create --files files of --file-mb MiB in --data-dir once, then each step read --batch-files of "
                    "them (dropping them from the page cache after, so reads reach storage) and run a small "
                    "compute. Logs one JSON line per step: workload, step, files, bytes, read_s, compute_s, step_s, "
                    "ts (Unix seconds).")
    parser.add_argument("--data-dir", type=Path, required=True, metavar="DIR", help="where the files live")
    parser.add_argument("--files", type=_positive(int), default=32, metavar="N",
                        help="files in the data set (default: 32)")
    parser.add_argument("--file-mb", type=_positive(float), default=4.0, metavar="MB",
                        help="size of each file in MiB (default: 4)")
    parser.add_argument("--batch-files", type=_positive(int), default=4, metavar="N",
                        help="files read per step (default: 4)")
    _add_compute(parser, 100.0, 256, "step")
    parser.add_argument("--step-ms", type=_not_negative, default=1000.0, metavar="MS",
                        help="a step starts at most this often (default: 1000)")
    _add_common(parser)
    parser.set_defaults(settings=InputSettings, run=run_input)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m stream_jobs.lab.workloads",
        description="ML-like workloads for the fault-injection lab. Each runs for --duration seconds, stops cleanly "
                    "on SIGTERM/SIGINT and talks only to the addresses it is given.")
    commands = parser.add_subparsers(dest="kind", required=True, metavar="KIND")
    _add_train(commands)
    _add_infer(commands)
    _add_input(commands)
    return parser


def settings_from(args: argparse.Namespace):
    """The frozen settings object of the chosen workload, from its parsed options."""
    return args.settings(**{field.name: getattr(args, field.name) for field in fields(args.settings)})


def _validate(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.kind != "train":
        return
    if len(args.peers) < 2:
        parser.error("--peers needs at least two ranks")
    if len(set(args.peers)) != len(args.peers):
        parser.error("--peers lists an address twice")
    if not 0 <= args.rank < len(args.peers):
        parser.error(f"--rank {args.rank} is not an index into the {len(args.peers)} --peers")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _validate(parser, args)
    settings = settings_from(args)
    name = " ".join(filter(None, (args.kind, getattr(args, "role", None))))
    _say(f"{name}: {settings}, duration {args.duration:g} s")
    stop = Stop(args.duration)
    stop.install_signal_handlers()
    log = JsonLines(getattr(args, "log", None))
    try:
        args.run(settings, stop, log)
    except (Stopped, PeerClosed) as reason:
        _say(f"{name}: stopping: {reason}")
    except (WorkloadError, OSError) as error:
        _say(f"{name}: {error}")
        return 1
    finally:
        log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
