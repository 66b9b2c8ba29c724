"""The ring allreduce over real sockets on 127.0.0.1: every rank gets the sum, however long the vector, and a rank that
never connects is named in time."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from reveal.lab.workloads import Endpoint, PeerUnreachable, Stop, connect_ring, listen, ring_allreduce
from tests.reveal.lab.workloads.running import LOCAL

pytestmark = pytest.mark.timeout(30)


def allreduce_in_threads(vectors: list[np.ndarray]) -> list[np.ndarray]:
    """Each rank in its own thread, connected as a ring over loopback TCP; every rank's result."""
    listeners = [listen(Endpoint(LOCAL, 0)) for _ in vectors]
    peers = [Endpoint(LOCAL, listener.getsockname()[1]) for listener in listeners]

    def rank_main(rank: int) -> np.ndarray:
        links = connect_ring(rank, peers, listeners[rank], timeout_s=5.0, stop=Stop())
        try:
            return ring_allreduce(vectors[rank], links, timeout_s=5.0)
        finally:
            links.close()

    try:
        with ThreadPoolExecutor(len(vectors)) as pool:
            futures = [pool.submit(rank_main, rank) for rank in range(len(vectors))]
            return [future.result(timeout=15) for future in futures]
    finally:
        for listener in listeners:
            listener.close()


@pytest.mark.parametrize("world, length", [(2, 1001), (3, 1001), (3, 2), (4, 10)])
def test_ring_allreduce_gives_every_rank_the_sum(world, length):
    vectors = [np.arange(length, dtype=np.float32) * (rank + 1) for rank in range(world)]
    originals = [vector.copy() for vector in vectors]
    expected = np.arange(length, dtype=np.float32) * (world * (world + 1) // 2)
    results = allreduce_in_threads(vectors)
    for result in results:
        np.testing.assert_array_equal(result, expected)
    for vector, original in zip(vectors, originals):
        np.testing.assert_array_equal(vector, original)


def test_ring_allreduce_of_a_gradient_larger_than_socket_buffers():
    rng = np.random.default_rng(7)
    vectors = [rng.standard_normal(1_000_003, dtype=np.float32) for _ in range(3)]
    results = allreduce_in_threads(vectors)
    np.testing.assert_allclose(results[0], np.sum(vectors, axis=0, dtype=np.float64), rtol=1e-5, atol=1e-5)
    for result in results[1:]:
        np.testing.assert_array_equal(result, results[0])


def test_connect_ring_names_the_rank_that_never_connects():
    with listen(Endpoint(LOCAL, 0)) as own, listen(Endpoint(LOCAL, 0)) as silent_peer:
        peers = [Endpoint(LOCAL, own.getsockname()[1]), Endpoint(LOCAL, silent_peer.getsockname()[1])]
        started = time.monotonic()
        with pytest.raises(PeerUnreachable, match=f"rank 1 at {peers[1]}"):
            connect_ring(0, peers, own, timeout_s=1.0, stop=Stop())
    assert time.monotonic() - started < 3.0
