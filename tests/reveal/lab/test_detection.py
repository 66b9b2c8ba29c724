"""Which incident detects which fault: a fault in force when judging starts is detected by an incident opened after
it began and no later than thirty seconds after judging starts, a configuration difference only by a configuration incident naming its setting and only once, and an
incident on a peer that waits on the faulty host is right without detecting anything."""

import dataclasses
import math

import pytest

from reveal.lab.detection import FROM_START_WITHIN_S, DetectionRules, names_setting, waits_on
from tests.reveal.lab.test_scoring import S, T0_NS, fault, figures, incident, judged, score


def standing(host, kind="straggler", subsystem="cpu", start_s=-40, end_s=3600, took_effect=True):
    """A fault put in force before the workloads started, for the whole run."""
    return dataclasses.replace(fault(host, start_s, end_s, subsystem, kind, took_effect), from_start=True)


def telling(host, opened_s, kind="peer", waiting_on="", channels=()):
    """An incident that may say whom it waits on and which channels it names."""
    return dataclasses.replace(incident(host, opened_s, ("network",), kind), waiting_on=waiting_on,
                               channels=tuple(channels))


JUDGED = judged(60, 3600, hosts=6)


# A fault in force when judging starts

@pytest.mark.parametrize("opened_s, detects", [(-41, False), (-39, True), (59, True), (60, True), (90, True),
                                               (90.5, False), (300, False)])
def test_a_fault_from_the_start_is_detected_from_its_start_until_thirty_seconds_into_judging(opened_s, detects):
    assert figures([standing("h3")], [incident("h3", opened_s)], time=JUDGED)["detected"] == detects


def test_its_delay_runs_from_the_start_of_judging_and_one_told_before_is_not_judged_for_precision():
    result = figures([standing("h3")], [incident("h3", 72), incident("h3", 80)], time=JUDGED)
    assert result["delay_p50_s"] == pytest.approx(12.0) and result["precision"] == 1.0
    early = figures([standing("h3")], [incident("h3", 30)], time=JUDGED)
    assert early["detected"] == 1 and early["delay_p50_s"] == 0.0 and early["incidents"] == 0


def test_a_scheduled_fault_begun_before_judging_is_judged_the_same_way():
    early = fault("h2", 50, 100)
    assert DetectionRules(JUDGED, 10 * S).interval(early) == (T0_NS + 50 * S, JUDGED.start_ns + 30 * S)
    assert figures([early], [incident("h2", 95)], time=JUDGED)["detected"] == 0
    assert figures([early], [incident("h2", 70)], time=JUDGED)["delay_p50_s"] == pytest.approx(10.0)


def test_a_fault_that_starts_in_judged_time_keeps_its_own_interval():
    rules = DetectionRules(JUDGED, 10 * S)
    assert rules.interval(fault("h2", 100, 130)) == (T0_NS + 100 * S, T0_NS + 140 * S)


def test_chance_recall_of_a_fault_from_the_start_is_over_its_whole_interval():
    strays = [incident("h1", opened) for opened in (500, 1500, 2500)]
    result = figures([standing("h3")], strays, time=JUDGED)
    rate = 3 / JUDGED.host_seconds
    assert result["chance_recall"] == pytest.approx(1 - math.exp(-rate * (40 + 60 + FROM_START_WITHIN_S)))


# Incidents on peers that wait on the faulty host

def test_a_peer_waiting_on_the_faulty_host_is_right_but_detects_nothing():
    truth = [standing("h3")]
    result = figures(truth, [telling("h1", 200, waiting_on="h3"), telling("h2", 210, waiting_on="h3")], time=JUDGED)
    assert result["precision"] == 1.0 and result["strict_recall"] == 0.0


@pytest.mark.parametrize("reported", [telling("h1", 200, waiting_on="h4"), telling("h1", 200),
                                      telling("h1", 3000, waiting_on="h2")])
def test_waiting_on_a_host_without_a_fault_in_force_is_a_false_alert(reported):
    truth = [standing("h3"), fault("h2", 100, 130)]
    assert figures(truth, [reported], time=JUDGED)["precision"] == 0.0


def test_waiting_on_a_fault_that_did_nothing_is_neither_right_nor_wrong():
    truth = [standing("h3", took_effect=False), fault("h2", 100, 130)]
    result = figures(truth, [telling("h1", 200, waiting_on="h3"), incident("h2", 105)], time=JUDGED)
    assert result["incidents"] == 1 and result["precision"] == 1.0


def test_an_incident_waits_on_another_host_only_while_its_fault_holds():
    loss = fault("h2", 100, 130)
    assert waits_on(loss, telling("h1", 130, waiting_on="h2"))
    assert not waits_on(loss, telling("h2", 120, waiting_on="h2"))
    assert not waits_on(loss, telling("h1", 131, waiting_on="h2"))


# Configuration differences

def test_a_configuration_difference_is_detected_only_by_a_configuration_incident_naming_its_setting():
    truth = [standing("h2", "mtu", "network")]
    named = telling("h2", 70, "configuration", channels=("net.mtu.eth0",))
    for missed in (incident("h2", 70, ("network",)), telling("h2", 70, "configuration", channels=("net.tcp_rmem",)),
                   telling("h3", 70, "configuration", channels=("net.mtu.eth0",))):
        assert figures(truth, [missed], time=JUDGED)["detected"] == 0
    result = score(truth, [named], time=JUDGED).summary()
    assert result["strict_recall"] == 1.0 and result["by_source"]["configuration"]["strict_recall"] == 1.0


def test_a_configuration_difference_is_told_once_and_a_second_telling_is_false():
    truth = [standing("h2", "mtu", "network")]
    twice = [telling("h2", 80, "configuration", channels=("net.mtu.eth0",)),
             telling("h2", 70, "configuration", channels=("net.mtu.eth0",))]
    result = figures(truth, twice, time=JUDGED)
    assert result["detected"] == 1 and result["delay_p50_s"] == pytest.approx(10.0) and result["precision"] == 0.5


def test_one_incident_may_name_two_differences_of_its_host():
    truth = [standing("h3", "tcp_buffers", "network"), standing("h3", "tx_queue_len", "network")]
    both = telling("h3", 65, "configuration", channels=("net.tx_queue_len.eth0", "net.tcp_wmem"))
    result = figures(truth, [both], time=JUDGED)
    assert result["strict_recall"] == 1.0 and result["precision"] == 1.0


def test_a_setting_is_named_by_its_channel_prefix_in_a_configuration_incident_alone():
    assert names_setting(telling("h1", 0, "configuration", channels=("net.tcp_congestion.reno",)),
                         "congestion_control")
    assert not names_setting(telling("h1", 0, "anomaly", channels=("net.tcp_congestion.reno",)),
                             "congestion_control")
    assert not names_setting(telling("h1", 0, "configuration", channels=("net.mtu.eth0",)), "tcp_buffers")

