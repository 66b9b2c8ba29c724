"""The decision composed: a host's own findings in a window become incidents named after what they hold."""

import numpy as np

from schemas.records import HostWindow, PersistedChannel
from stream_jobs.engine.decide.decision import Decision

NAMES = ("net.rx_bytes.eth0", "vm.numa_hit", "vm.numa_local")
S = 1_000_000_000


def window(host: str, window_id: int, persisted: tuple[PersistedChannel, ...]) -> HostWindow:
    departures = np.zeros(len(NAMES))
    for p in persisted:
        departures[p.index] = p.departure
    return HostWindow(host, "c", window_id, (window_id - 3) * S, window_id * S, 1, NAMES, np.zeros(len(NAMES)),
                      bool(persisted), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, departures, persisted)


def test_an_incident_is_named_after_its_own_evidence_not_a_channel_its_peers_share():
    """The host's network channel left its band with its peer's (the job's), its memory counters alone: the host's
    own finding is its memory counters', and it is named memory, never network."""
    rx = PersistedChannel(0, 30.0, "network", "mean", 30.0)
    hit, local = PersistedChannel(1, -89.9, "memory", "residual", 40.0), PersistedChannel(2, -89.9, "memory",
                                                                                          "residual", 40.0)
    decision, events = Decision(), []
    for window_id in range(10, 16):
        kept = {w: {"h0": frozenset({NAMES[0], NAMES[1], NAMES[2]}), "h1": frozenset({NAMES[0]})}
                for w in range(window_id - 8, window_id + 1)}
        events += decision.host_window(window("h0", window_id, (rx, hit, local)), kept)
    opened = [e for e in events if e.state == "open"]
    assert [e.subsystem for e in opened] == ["memory"], events
    assert "vm.numa_hit residual" in opened[0].summary and "net.rx_bytes" not in opened[0].summary


def test_a_closed_incident_sends_its_close_and_reopens_when_its_symptom_returns():
    rx = PersistedChannel(0, 30.0, "network", "mean", 30.0)
    decision, states = Decision(), []
    for window_id in range(10, 120):
        flagged = window_id < 15 or 60 <= window_id < 62
        summary = window("h0", window_id, (rx,) if flagged else ())
        states += [(window_id, e.state) for e in decision.host_window(summary, {window_id: {"h0": frozenset()}})]
    assert states == [(10, "open"), (44, "closed"), (60, "update"), (91, "closed")]
