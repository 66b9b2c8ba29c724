"""Why a workload stops: the failures it reports name the peer, the wait and the reason; an ordinary end is no
failure."""

from reveal.lab.workloads.errors import PeerClosed, PeerTimeout, PeerUnreachable, ProtocolError, Stopped, WorkloadError


def test_failures_name_the_peer_and_how_long_it_was_waited_for():
    unreachable = PeerUnreachable("rank 1 at 10.251.0.12:29500", 30.0, "Connection refused")
    assert str(unreachable) == "rank 1 at 10.251.0.12:29500 was not reachable within 30 s (Connection refused)"
    assert unreachable.peer == "rank 1 at 10.251.0.12:29500"
    timeout = PeerTimeout("server", 2.5)
    assert str(timeout) == "server sent or took nothing for 2.5 s" and timeout.peer == "server"


def test_only_failures_are_workload_errors():
    assert all(issubclass(kind, WorkloadError) for kind in (PeerUnreachable, PeerTimeout, ProtocolError))
    assert not any(issubclass(kind, WorkloadError) for kind in (PeerClosed, Stopped))
