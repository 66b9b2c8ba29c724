"""Incidents that open on a peer seconds after a host's: told as the host's, unless they are loss verdicts."""

import pytest

from schemas.records import Alert
from stream_jobs.engine.decide.peer_effects import PeerEffects


def opening(host: str, kind: str, window: int, subsystem: str = "cpu") -> Alert:
    return Alert(f"{host}/{kind}:{window}", host, "c", "open", window * 10**9, window * 10**9, 5.0, subsystem,
                 f"{kind} on {host}", "", kind)


def test_a_peers_own_finding_right_after_a_hosts_is_told_as_an_update_of_the_hosts():
    effects = PeerEffects(within_windows=3)
    assert effects.told("c", 10, [opening("h5", "anomaly", 10)]) == [opening("h5", "anomaly", 10)]
    [update] = effects.told("c", 12, [opening("h6", "anomaly", 12)])
    assert (update.alert_id, update.state) == ("h5/anomaly:10", "update")
    assert "then on peers: h6 (anomaly on h6)" in update.summary


def test_a_peers_loss_verdict_right_after_a_hosts_finding_is_told_on_its_own():
    effects = PeerEffects(within_windows=3)
    effects.told("c", 10, [opening("h5", "anomaly", 10)])
    assert effects.told("c", 12, [opening("h6", "retransmissions", 12)]) == [opening("h6", "retransmissions", 12)]


def test_a_peers_loss_verdict_seconds_after_a_hosts_is_the_same_lossy_link():
    effects = PeerEffects(within_windows=3, loss_within_windows=10)
    effects.told("c", 10, [opening("h2", "retransmissions", 10, "network")])
    [update] = effects.told("c", 17, [opening("h3", "retransmissions", 17, "network")])
    assert update.alert_id == "h2/retransmissions:10" and "then on peers: h3" in update.summary
    assert effects.told("c", 17, [opening("h4", "anomaly", 17)]) == [opening("h4", "anomaly", 17)], \
        "a finding of another kind follows within 3 windows only"
    assert effects.told("c", 21, [opening("h5", "retransmissions", 21, "network")]) == \
        [opening("h5", "retransmissions", 21, "network")]


def test_a_loss_verdict_that_no_longer_shows_leads_no_peers_loss_verdict():
    """A few seconds of loss on h6 hold its verdict open for a while; a lossy link on h2 that starts after h6's went
    quiet is h2's own incident, while one that starts as h6's still shows is the same link seen from h6's peer."""
    effects = PeerEffects(within_windows=3, loss_within_windows=60)
    effects.told("c", 10, [opening("h6", "retransmissions", 10, "network")], {"h6/retransmissions:10": 10})
    own = opening("h2", "retransmissions", 22, "network")
    assert effects.told("c", 22, [own], {"h6/retransmissions:10": 14, "h2/retransmissions:22": 22}) == [own]
    [update] = effects.told("c", 23, [opening("h3", "retransmissions", 23, "network")],
                            {"h6/retransmissions:10": 14, "h2/retransmissions:22": 23, "h3/retransmissions:23": 23})
    assert update.alert_id == "h2/retransmissions:22" and "then on peers: h3" in update.summary


def test_a_peers_network_finding_while_a_lossy_link_is_young_is_the_loss_seen_from_the_other_end():
    """The server that receives from a lossy client sees segments out of order in the window the client's verdict
    opens, and its receive path changes over the next minute; a CPU finding on a peer is told on its own."""
    effects = PeerEffects(within_windows=3, loss_within_windows=60)
    verdict, receiver_now = effects.told("c", 10, [opening("h1", "anomaly", 10, "network"),
                                                   opening("h2", "retransmissions", 10, "network")])
    assert verdict == opening("h2", "retransmissions", 10, "network")
    assert receiver_now.alert_id == "h2/retransmissions:10" and "then on peers: h1" in receiver_now.summary
    [later] = effects.told("c", 52, [opening("h3", "anomaly", 52, "network")])
    assert later.alert_id == "h2/retransmissions:10" and "h3" in later.summary
    assert effects.told("c", 53, [opening("h4", "anomaly", 53)]) == [opening("h4", "anomaly", 53)]
    assert effects.told("c", 75, [opening("h5", "anomaly", 75, "network")]) == \
        [opening("h5", "anomaly", 75, "network")], "a minute after the verdict opened, a network finding is new"


def test_a_loss_verdict_can_lead_its_peers_findings():
    effects = PeerEffects(within_windows=3)
    effects.told("c", 10, [opening("h2", "retransmissions", 10)])
    [update] = effects.told("c", 11, [opening("h3", "anomaly", 11)])
    assert update.alert_id == "h2/retransmissions:10" and "then on peers: h3" in update.summary


def test_within_windows_must_be_positive():
    with pytest.raises(ValueError):
        PeerEffects(within_windows=0)
    with pytest.raises(ValueError):
        PeerEffects(loss_within_windows=0)
