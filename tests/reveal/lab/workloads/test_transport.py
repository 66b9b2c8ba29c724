"""TCP between workloads on 127.0.0.1: whole messages read however they arrive, a peer that closes or falls silent
told apart, a stop noticed while waiting, and a peer that is not up named after the timeout."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from reveal.lab.workloads import Endpoint, PeerTimeout, PeerUnreachable, Stop, Stopped, connect_with_retry, listen
from reveal.lab.workloads.errors import PeerClosed, WorkloadError
from reveal.lab.workloads.transport import close_quietly, recv_exactly
from tests.reveal.lab.workloads.running import LOCAL, free_port

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def connected():
    """Both ends of one loopback TCP connection: (ours, the peer's)."""
    with listen(Endpoint(LOCAL, 0)) as listener:
        ours = connect_with_retry(Endpoint(LOCAL, listener.getsockname()[1]), 5.0, Stop())
        theirs, _ = listener.accept()
    yield ours, theirs
    close_quietly(ours)
    close_quietly(theirs)


def test_a_message_sent_in_pieces_is_read_whole(connected):
    ours, theirs = connected

    def send_in_pieces():
        for piece in (b"ab", b"cde", b"fghij"):
            theirs.sendall(piece)
            time.sleep(0.05)

    sender = threading.Thread(target=send_in_pieces)
    sender.start()
    assert recv_exactly(ours, 10, Stop()) == bytearray(b"abcdefghij")
    sender.join()


def test_a_peer_that_closes_is_none_before_a_message_and_an_error_within_one(connected):
    ours, theirs = connected
    theirs.sendall(b"abc")
    close_quietly(theirs)
    assert recv_exactly(ours, 3, Stop()) == bytearray(b"abc")
    assert recv_exactly(ours, 3, Stop()) is None
    with listen(Endpoint(LOCAL, 0)) as listener:
        ours = connect_with_retry(Endpoint(LOCAL, listener.getsockname()[1]), 5.0, Stop())
        theirs, _ = listener.accept()
    theirs.sendall(b"ab")
    close_quietly(theirs)
    with pytest.raises(PeerClosed, match="in the middle of a message"):
        recv_exactly(ours, 4, Stop(), peer="rank 1")
    close_quietly(ours)


def test_a_silent_peer_times_out_and_a_stop_ends_the_wait(connected):
    ours, _ = connected
    started = time.monotonic()
    with pytest.raises(PeerTimeout, match="rank 1 sent or took nothing for 0.5 s"):
        recv_exactly(ours, 4, Stop(), idle_timeout_s=0.5, peer="rank 1")
    assert time.monotonic() - started < 2.0
    with pytest.raises(Stopped, match="stopped while waiting on rank 1"):
        recv_exactly(ours, 4, Stop(duration_s=0.3), peer="rank 1")


def test_a_peer_that_never_comes_up_is_named_after_the_timeout():
    missing = Endpoint(LOCAL, free_port())
    started = time.monotonic()
    with pytest.raises(PeerUnreachable, match=f"rank 1 at {missing} was not reachable within 0.5 s"):
        connect_with_retry(missing, 0.5, Stop(), name="rank 1")
    assert time.monotonic() - started < 2.0
    with pytest.raises(Stopped):
        connect_with_retry(missing, 5.0, Stop(duration_s=0.2))


def test_an_address_in_use_cannot_be_listened_on():
    with socket.socket() as taken:
        taken.bind((LOCAL, 0))
        taken.listen()
        with pytest.raises(WorkloadError, match="cannot listen on"):
            listen(Endpoint(LOCAL, taken.getsockname()[1]))
