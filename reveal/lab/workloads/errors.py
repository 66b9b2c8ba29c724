"""Why a workload stops: a failure it reports (`WorkloadError`) or an ordinary end (`PeerClosed`, `Stopped`)."""

from __future__ import annotations


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
