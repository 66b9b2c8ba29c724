"""The stages' records from the engine's results: outputs that add up field by field, window and retransmission rows
with their non-finite numbers stored as zero, a tracked incident's alert naming its host and concern, and a
configuration difference told as one notice, opened and closed at once."""

import math

import numpy as np
import pytest

from schemas.channels import TCP_RETRANSMITS
from schemas.records import Alert, Anomaly, Catalog, Channel, HostWindow
from stream_jobs.engine.decide.incidents import AlertEvent
from stream_jobs.engine.retransmissions import RetransVerdict
from stream_jobs.engine.verdicts import WindowVerdict
from stream_jobs.engine.decide.findings import departing_channels
from stream_jobs.records import (StageOutput, configuration_alert, finite_or_zero, outside_band,
                                 retransmission_anomaly, retransmission_row, tracked_alert, window_row)


def test_outputs_extend_field_by_field():
    alert = Alert("h:1", "h", "c", "open", 1, 2, 1.0, "cpu", "cpu rose")
    output, more = StageOutput(window_rows=[["w1"]]), StageOutput(window_rows=[["w2"]], alerts=[alert],
                                                                  retransmission_rows=[["r"]])
    output.extend(more)
    assert (output.window_rows, output.alerts, output.retransmission_rows) == ([["w1"], ["w2"]], [alert], [["r"]])
    assert more.window_rows == [["w2"]] and output.anomalies == []


@pytest.mark.parametrize("value, stored", [(math.nan, 0.0), (math.inf, 0.0), (-math.inf, 0.0), (2.5, 2.5), (-1, -1.0)])
def test_non_finite_numbers_are_stored_as_zero(value, stored):
    assert finite_or_zero(value) == stored and type(finite_or_zero(value)) is float


def test_a_window_row_keeps_its_detectors_in_order_and_a_score_without_a_baseline_as_zero():
    catalog = Catalog("h", "c", (Channel("cpu.busy", "cpu", "gauge"),))
    verdict = WindowVerdict(3, 10, 20, 30, False, math.nan, math.nan, False, (), "", "", (),
                            detector_scores={"zscore": 1.5, "mahalanobis": math.inf},
                            detector_thresholds={"zscore": 1.0, "mahalanobis": 2.0})
    assert window_row(catalog, verdict) == ["h", "c", 3, 10, 20, 30, 0, 0.0, 0.0, 0, ["zscore", "mahalanobis"],
                                            [1.5, 0.0], [1.0, 2.0], [], ""]


@pytest.mark.parametrize("tracked, kind", [("h1/peers", "peer"), ("h1/retransmissions", "retransmissions"),
                                           ("h1/anomaly:cpu", "anomaly")])
def test_a_tracked_incident_is_told_under_its_host_and_the_kind_of_its_concern(tracked, kind):
    event = AlertEvent(f"{tracked}:12", tracked, "open", 1, 2, math.inf, "memory", f"{tracked} deviates")
    assert tracked_alert(event, "c") == Alert(f"{tracked}:12", "h1", "c", "open", 1, 2, 0.0, "memory", "h1 deviates",
                                              "", kind)
    regime = AlertEvent("h1/anomaly:cpu:3", "h1/anomaly:cpu", "closed", 1, 2, 1.0, "cpu", "workload", kind="regime")
    assert tracked_alert(regime, "c").kind == "regime"


def test_a_configuration_difference_is_one_notice_opened_and_closed_at_once():
    anomaly = Anomaly("h2", "c", 40, 100, 200, ("configuration",), 2.0, 1.0, "memory",
                      "h2 is configured unlike its 3 peers", (), "configuration difference", "check the kernel")
    assert configuration_alert(anomaly) == Alert("h2:config:40", "h2", "c", "closed", 100, 200, 2.0, "memory",
                                                 "h2 is configured unlike its 3 peers", "check the kernel",
                                                 "configuration")


def test_fault_induced_retransmissions_are_a_row_and_an_anomaly_with_their_rate_as_evidence():
    summary = HostWindow("h1", "c", 9, 100, 400, 1, (), [], True, 0.0, 30.0, 1000.0, 0.0, 0.0, 0.0, 0.0)
    verdict = RetransVerdict("h1", 9, "fault", "loss above expectation", 6.5)
    assert retransmission_row("c", summary, verdict) == ["h1", "c", 9, 100, 400, "fault", "loss above expectation",
                                                         30.0, 1000.0, 6.5]
    anomaly = retransmission_anomaly(summary, verdict)
    assert anomaly.detectors == ("retransmissions",) and anomaly.subsystem == "network"
    assert (anomaly.evidence[0].channel, anomaly.evidence[0].value, anomaly.evidence[0].z) == (TCP_RETRANSMITS, 30.0,
                                                                                               6.5)


def test_a_summary_hands_on_only_departures_outside_their_band():
    """Inside its band a channel's departure is 0 (as host_window.avsc says), so a summary's departures compress to
    almost nothing; every departing channel keeps its exact departure, and the cluster stage sees the same ones."""
    departures = np.array([0.0, 0.4, -0.999, 1.0, -1.0, 3.5, -7.25, 0.99999, 0.99999999])
    names = tuple(f"c{i}" for i in range(len(departures)))
    handed_on = outside_band(departures)
    assert handed_on.dtype == np.float32
    assert handed_on.tolist() == [0.0, 0.0, 0.0, 1.0, -1.0, 3.5, -7.25, 0.0, 1.0]  # the last is 1 in float32

    def departing(values):
        return departing_channels(HostWindow("h", "c", 1, 0, 1, 1, names, np.zeros(len(names)), False, 0.0, 0.0, 0.0,
                                             0.0, 0.0, 0.0, 0.0, values))

    assert departing(handed_on) == departing(departures.astype(np.float32)) == {"c3", "c4", "c5", "c6", "c8"}
