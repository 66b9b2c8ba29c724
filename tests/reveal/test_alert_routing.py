"""Routing alerts: Alertmanager and Slack payloads, the cluster and severity filter, the ledger that posts each event
once, and a receiver that refuses or is down."""

import pytest

from schemas.records import Alert
from reveal.alert_routing import (AlertFilter, EventLedger, WebhookRefused, WebhookSender,
                                  alertmanager_api_payload, alertmanager_payload, describe, slack_payload)
from tests.http_receiver import Receiver


def alert(state: str = "open", severity: float = 12.0, end_s: int = 3) -> Alert:
    return Alert("h1:cpu:7", "h1", "c1", state, 1_700_000_000 * 10**9, (1_700_000_000 + end_s) * 10**9, severity,
                 "cpu", "cpu anomaly on h1 over 3 windows", "look for a process outside the job")


def test_alertmanager_payload_fires_until_closed_and_fingerprints_the_incident():
    opened, closed = alertmanager_payload(alert("open")), alertmanager_payload(alert("closed", end_s=9))
    assert opened["version"] == "4" and opened["status"] == "firing" and closed["status"] == "resolved"
    first, last = opened["alerts"][0], closed["alerts"][0]
    assert first["fingerprint"] == last["fingerprint"] and first["labels"] == last["labels"]
    assert first["labels"]["alertname"] == "RevealIncident" and first["labels"]["severity"] == "critical"
    assert first["startsAt"] == "2023-11-14T22:13:20.000Z" and first["endsAt"] == "0001-01-01T00:00:00Z"
    assert last["endsAt"] == "2023-11-14T22:13:29.000Z"
    assert alertmanager_payload(alert(severity=3.0))["alerts"][0]["labels"]["severity"] == "warning"


def test_alertmanagers_own_api_gets_the_alert_without_an_end_until_the_incident_closes():
    [opened], [closed] = alertmanager_api_payload(alert("open")), alertmanager_api_payload(alert("closed", end_s=9))
    assert opened["labels"] == closed["labels"] == alertmanager_payload(alert())["alerts"][0]["labels"]
    assert "endsAt" not in opened and closed["endsAt"] == "2023-11-14T22:13:29.000Z"
    assert opened["startsAt"] == "2023-11-14T22:13:20.000Z"
    unplaced = Alert("c1:peers:1", "", "c1", "open", 10**18, 10**18, 5.0, "", "peers differ", "", "peer")
    assert "host" not in alertmanager_api_payload(unplaced)[0]["labels"]


def test_slack_payload_and_the_printed_line_carry_state_place_severity_words_and_hint():
    text = slack_payload(alert("closed"))["text"]
    assert "*closed*" in text and "`c1/h1`" in text and "severity 12.0" in text and "_hint:_ look for" in text
    line = describe(alert())
    assert line.startswith("2023-11-14T22:13:23.000Z OPEN   [anomaly/cpu] c1/h1 severity 12.0 (critical): cpu anomaly")
    assert line.endswith("(h1:cpu:7)")


def test_the_filter_keeps_one_cluster_at_or_above_a_severity():
    assert AlertFilter("c1", 12.0).wants(alert()) and not AlertFilter("c2").wants(alert())
    assert not AlertFilter(min_severity=12.5).wants(alert())


def test_the_ledger_posts_each_event_once_and_forgets_the_oldest_beyond_its_capacity():
    ledger = EventLedger(capacity=2)
    assert ledger.is_new(alert())
    ledger.remember(alert())
    assert not ledger.is_new(alert()) and ledger.is_new(alert("update", end_s=4))
    ledger.remember(alert("update", end_s=4))
    ledger.remember(alert("closed", end_s=5))
    assert ledger.is_new(alert())


def test_a_receiver_that_refuses_for_good_is_not_retried():
    receiver = Receiver(status=400).start()
    try:
        with pytest.raises(WebhookRefused, match="HTTP 400"):
            WebhookSender(receiver.url).post({"text": "x"})
    finally:
        receiver.stop()
    assert len(receiver.bodies) == 1


def test_a_receiver_that_is_down_is_retried_until_told_to_stop():
    receiver = Receiver()
    waits = []
    sender = WebhookSender(receiver.url, sleep=waits.append)
    assert not sender.post({"text": "x"}, should_stop=lambda: len(waits) >= 7)
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0]
    receiver.start()
    try:
        assert sender.post({"text": "x"}) and receiver.bodies == [{"text": "x"}]
    finally:
        receiver.stop()
