"""Strict lab scoring on hand-made incidents and truths: detection only by an incident that opens inside the fault
(plus grace), chance recall, one time base for false alerts, per-window retransmission truth with balanced
accuracy, faults without effect, sources, attribution by kind, and suites that add counts."""

import dataclasses
import json
import math

import pytest
from hypothesis import given, strategies as st

from sinks.tables import LAB_SCORES
from reveal.lab.scoring import (JudgedTime, RunScore, combine, loss_dropped_within, rule_of_three,
                                     run_score_from_record, run_score_record, score_modes, score_rows, score_run,
                                     score_table)
from reveal.lab.truth import SUBSYSTEMS, FaultLabel, ReportedIncident, RetransmissionVerdict, RunOutputs

S = 1_000_000_000
T0_NS = 1_700_000_000 * S
HOUR_S = 3600


def fault(host, start_s, end_s, subsystem="cpu", kind="cpu_contention", took_effect=True, drops=()):
    timeline = tuple((T0_NS + round(t * S), count) for t, count in drops)
    return FaultLabel(kind, host, T0_NS + round(start_s * S), T0_NS + round(end_s * S), subsystem, 1.0, "",
                      took_effect, {}, timeline)


def incident(host, opened_s, subsystems=("cpu",), kind="anomaly", length_s=10):
    return ReportedIncident(host, T0_NS + round((opened_s - 3) * S), T0_NS + round((opened_s + length_s) * S),
                            T0_NS + round(opened_s * S), tuple(subsystems), 1.0, kind)


def verdict(host, start_s, end_s, category):
    return RetransmissionVerdict(host, T0_NS + round(start_s * S), T0_NS + round(end_s * S), category)


def judged(start_s=0, end_s=HOUR_S, hosts=3):
    return JudgedTime(T0_NS + round(start_s * S), T0_NS + round(end_s * S), hosts)


def score(truth, incidents=(), retransmissions=(), time=None):
    outputs = RunOutputs(incidents=list(incidents), retransmissions=list(retransmissions))
    return score_run(truth, outputs, time or judged())


def figures(*args, **kwargs):
    return score(*args, **kwargs).figures()


# Detection: only an incident that opens inside the fault (or its grace) counts

def test_an_incident_already_open_when_the_fault_starts_does_not_detect_it():
    truth = [fault("h1", 100, 130)]
    long_open = ReportedIncident("h1", T0_NS + 10 * S, T0_NS + 200 * S, T0_NS + 12 * S, ("cpu",))
    result = figures(truth, [long_open])
    assert result["strict_recall"] == 0.0 and result["detected"] == 0
    assert math.isnan(result["delay_p50_s"])


@pytest.mark.parametrize("opened_s, detects", [(99.9, False), (100, True), (125, True), (140, True),
                                               (140.5, False)])
def test_the_detection_interval_runs_from_the_start_to_ten_seconds_after_the_end(opened_s, detects):
    assert figures([fault("h1", 100, 130)], [incident("h1", opened_s)])["detected"] == detects


def test_the_delay_is_the_opening_of_the_first_detecting_incident_minus_the_start():
    truth = [fault("h1", 100, 130)]
    result = figures(truth, [incident("h1", 112), incident("h1", 104)])
    assert result["delay_p50_s"] == pytest.approx(4.0)
    assert result["precision"] == 1.0


def test_an_incident_on_another_host_neither_detects_nor_is_right():
    result = figures([fault("h1", 100, 130)], [incident("h2", 105)])
    assert result["strict_recall"] == 0.0 and result["precision"] == 0.0 and result["f1"] == 0.0


def test_precision_counts_incidents_opened_in_the_judged_time_of_fault_runs():
    truth = [fault("h1", 100, 130)]
    during_baseline = incident("h2", 30)
    result = figures(truth, [during_baseline, incident("h1", 103), incident("h3", 400)], time=judged(60, 600))
    assert result["incidents"] == 2 and result["precision"] == 0.5
    assert result["f1"] == pytest.approx(2 * 0.5 * 1.0 / 1.5)


# Faults that did not take effect

def test_a_fault_without_effect_is_left_out_of_recall_and_its_incidents_out_of_precision():
    truth = [fault("h1", 100, 130), fault("h2", 200, 230, took_effect=False)]
    result = score(truth, [incident("h1", 105), incident("h2", 205)])
    assert result.figures()["faults_took_effect"] == 1 and result.figures()["faults"] == 2
    assert result.figures()["strict_recall"] == 1.0 and result.figures()["precision"] == 1.0


# Chance recall

def test_chance_recall_is_what_the_runs_incident_rate_would_detect_by_accident():
    truth = [fault("h1", 100, 130), fault("h2", 1000, 1030)]
    strays = [incident(host, opened) for host, opened in (("h3", 500), ("h3", 2000), ("h2", 3000))]
    result = figures(truth, strays, time=judged(0, 3600, hosts=3))
    rate = 3 / (3 * 3600)
    assert result["chance_recall"] == pytest.approx(1 - math.exp(-rate * 40))
    assert result["strict_recall"] == 0.0


def test_a_noisy_engine_gets_a_high_chance_recall_beside_its_recall():
    truth = [fault("h1", 100, 130)]
    storm = [incident(host, opened) for host in ("h1", "h2") for opened in range(50, 3600, 20)]
    result = figures(truth, storm, time=judged(0, 3600, hosts=2))
    assert result["strict_recall"] == 1.0 and result["chance_recall"] > 0.85


# False alerts per host-hour: one time base

def test_false_alerts_are_counted_and_divided_over_the_same_judged_time():
    clean = figures([], [incident("h1", 30), incident("h1", 700), incident("h2", 1900)],
                    time=judged(600, 2400, hosts=2))
    assert clean["clean_host_hours"] == pytest.approx(2 * 1800 / 3600)
    assert clean["false_alerts_per_host_hour"] == pytest.approx(2 / 1.0)


def test_a_quiet_clean_run_has_zero_false_alerts_and_the_rule_of_three_bounds_them():
    clean = figures([], [], time=judged(600, 7800, hosts=6))
    assert clean["false_alerts_per_host_hour"] == 0.0 and clean["clean_host_hours"] == pytest.approx(12.0)
    assert rule_of_three(12.0) == pytest.approx(0.25)


def test_fault_runs_add_no_false_alert_hours():
    result = figures([fault("h1", 100, 130)], [incident("h2", 500)])
    assert math.isnan(result["false_alerts_per_host_hour"]) and result["clean_host_hours"] == 0.0


def test_judged_time_is_validated():
    with pytest.raises(ValueError, match="hosts"):
        JudgedTime(0, 10, 0)
    with pytest.raises(ValueError, match="ends"):
        JudgedTime(10, 10, 2)


# Sources

def test_each_source_is_scored_on_its_own_incidents():
    truth = [fault("h1", 100, 130, "network", "packet_loss")]
    reported = [incident("h1", 104, ("network",), kind="retransmissions"), incident("h2", 300, kind="peer"),
                incident("h1", 90, kind="anomaly")]
    result = score(truth, reported).summary()
    by_source = result["by_source"]
    assert by_source["retransmissions"]["strict_recall"] == 1.0 and by_source["retransmissions"]["precision"] == 1.0
    assert by_source["peer"]["strict_recall"] == 0.0 and by_source["peer"]["precision"] == 0.0
    assert by_source["host_detectors"]["strict_recall"] == 0.0
    assert math.isnan(by_source["regime"]["precision"])
    assert result["strict_recall"] == 1.0 and result["precision"] == pytest.approx(1 / 3)


def test_clean_false_alerts_are_split_by_source():
    clean = score([], [incident("h1", 100, kind="peer"), incident("h1", 200, kind="peer"),
                       incident("h2", 300, kind="regime")], time=judged(0, 3600, hosts=1)).summary()
    assert clean["by_source"]["peer"]["false_alerts_per_host_hour"] == 2.0
    assert clean["by_source"]["regime"]["false_alerts_per_host_hour"] == 1.0
    assert clean["by_source"]["host_detectors"]["false_alerts_per_host_hour"] == 0.0
    assert clean["false_alerts_per_host_hour"] == 3.0


# Attribution

def test_attribution_is_judged_on_the_first_detecting_incident_per_fault_kind():
    truth = [fault("h1", 100, 130, "network", "packet_loss"), fault("h2", 200, 230, "cpu", "cpu_contention"),
             fault("h3", 300, 330, "storage", "storage_burst")]
    reported = [incident("h1", 103, ("network",)), incident("h1", 110, ("cpu",)),
                incident("h2", 205, ("memory", "cpu")), incident("h3", 305, ("cpu", "memory", "network", "storage"))]
    result = score(truth, reported).summary()
    assert result["attribution_top1"] == pytest.approx(1 / 3) and result["attribution_top3"] == pytest.approx(2 / 3)
    by_kind = result["attribution_by_kind"]
    assert by_kind["packet_loss"]["attribution_top1"] == 1.0
    assert by_kind["cpu_contention"] == {"detected": 1.0, "attribution_top1": 0.0, "attribution_top3": 1.0}
    assert by_kind["storage_burst"]["attribution_top3"] == 0.0


# Retransmissions: per-window truth, balanced accuracy

LOSS = fault("h1", 100, 130, "network", "packet_loss", drops=((100, 0), (105, 0), (110, 4), (115, 9), (130, 9)))


def test_windows_count_as_fault_induced_only_where_the_drop_counter_grew():
    assert loss_dropped_within([LOSS], "h1", T0_NS + 104 * S, T0_NS + 107 * S)
    assert not loss_dropped_within([LOSS], "h1", T0_NS + 101 * S, T0_NS + 104 * S)
    assert not loss_dropped_within([LOSS], "h1", T0_NS + 116 * S, T0_NS + 129 * S)
    assert not loss_dropped_within([LOSS], "h2", T0_NS + 104 * S, T0_NS + 107 * S)


def test_always_answering_workload_intrinsic_scores_half_not_most():
    windows = [verdict("h1", 104, 107, "workload-intrinsic"), verdict("h1", 110, 113, "workload-intrinsic")]
    windows += [verdict("h2", start, start + 3, "workload-intrinsic") for start in range(100, 130)]
    result = figures([LOSS], retransmissions=windows)
    assert result["retransmission_recall_fault_induced"] == 0.0
    assert result["retransmission_recall_workload_intrinsic"] == 1.0
    assert result["retransmission_balanced_accuracy"] == 0.5


def test_balanced_accuracy_is_also_given_at_each_loss_fraction_and_survives_a_stored_record():
    light = dataclasses.replace(fault("h2", 200, 230, "network", "packet_loss", drops=((200, 0), (230, 5))),
                                magnitude=0.001)
    heavy = dataclasses.replace(LOSS, magnitude=0.01)
    windows = [verdict("h1", 110, 113, "fault-induced"), verdict("h1", 114, 117, "fault-induced"),
               verdict("h2", 205, 208, "fault-induced"), verdict("h2", 210, 213, "workload-intrinsic"),
               verdict("h3", 205, 208, "workload-intrinsic")]
    scored = score([heavy, light], retransmissions=windows)
    result = scored.figures()
    assert result["retransmission_balanced_accuracy.loss_1%"] == 1.0
    assert result["retransmission_balanced_accuracy.loss_0.1%"] == 0.75
    assert result["retransmission_balanced_accuracy"] == pytest.approx((3 / 4 + 1) / 2)
    again = run_score_from_record(json.loads(json.dumps(run_score_record(scored))))
    assert (again + again).retransmissions.by_loss == ((0.001, 2, 2), (0.01, 4, 0))


def test_a_missed_loss_window_counts_even_when_the_classifier_saw_nothing():
    windows = [verdict("h1", 110, 113, "none"), verdict("h1", 120, 123, "none"),
               verdict("h2", 110, 113, "fault-induced"), verdict("h3", 110, 113, "workload-intrinsic")]
    result = figures([LOSS], retransmissions=windows)
    assert result["retransmission_windows_judged"] == 3
    assert result["retransmission_recall_fault_induced"] == 0.0
    assert result["retransmission_recall_workload_intrinsic"] == 0.5


def test_a_loss_fault_without_samples_counts_its_whole_interval_when_it_took_effect():
    old = fault("h1", 100, 130, "network", "packet_loss")
    result = figures([old], retransmissions=[verdict("h1", 110, 113, "fault-induced"),
                                             verdict("h1", 200, 203, "workload-intrinsic")])
    assert result["retransmission_balanced_accuracy"] == 1.0


def test_an_unknown_retransmission_category_is_rejected():
    with pytest.raises(ValueError, match="category"):
        score([], retransmissions=[verdict("h1", 0, 3, "maybe")])


# Modes, suites, tables and rows

def test_each_threshold_mode_is_scored_on_its_own_outputs():
    truth = [fault("h1", 100, 130)]
    scores = score_modes(truth, {"calibrated": RunOutputs([incident("h1", 105)]), "paper": RunOutputs([])},
                         judged())
    assert scores["calibrated"].figures()["strict_recall"] == 1.0 and scores["paper"].figures()["strict_recall"] == 0


def test_a_suite_sums_counts_rather_than_averaging_ratios():
    first = score([fault("h1", 100, 130)], [incident("h1", 105)])
    second = score([fault("h1", 100, 130)], [incident("h2", 50 + i) for i in range(9)])
    clean = score([], [incident("h1", 100)], time=judged(0, 3600, hosts=2))
    suite = combine([first, second, clean]).figures()
    assert suite["strict_recall"] == 0.5 and suite["precision"] == pytest.approx(1 / 10)
    assert suite["false_alerts_per_host_hour"] == 0.5 and suite["faults"] == 2


def test_an_empty_suite_has_no_figures():
    assert all(math.isnan(value) or value == 0 for value in combine([]).figures().values())


def test_counts_survive_their_json_form():
    original = score([LOSS, fault("h2", 200, 230)], [incident("h1", 104, ("network",), kind="retransmissions")],
                     [verdict("h1", 110, 113, "fault-induced")])
    assert run_score_from_record(run_score_record(original)) == original


def test_figures_start_with_the_headline_keys():
    names = list(RunScore().figures())
    assert names[:10] == ["strict_recall", "chance_recall", "precision", "f1", "delay_p50_s",
                          "false_alerts_per_host_hour", "clean_host_hours", "retransmission_balanced_accuracy",
                          "attribution_top1", "faults_took_effect"]


def test_score_table_lays_modes_side_by_side_with_sources():
    summary = score([fault("h1", 100, 130)], [incident("h1", 105, kind="peer")]).summary()
    table = score_table({"calibrated": summary, "paper": summary}).splitlines()
    assert table[0].split() == ["figure", "calibrated", "paper"]
    assert any(line.split()[:3] == ["peer.strict_recall", "1.000", "1.000"] for line in table)


def test_score_rows_match_the_lab_scores_columns():
    rows = score_rows("run-7", "loss", {"calibrated": {"strict_recall": 0.5, "by_source": {"peer": {"precision": 0.25}}}})
    assert [dict(zip(LAB_SCORES.columns, row)) for row in rows] == [
        {"run_id": "run-7", "scenario": "loss", "thresholds": "calibrated", "metric": "strict_recall", "value": 0.5},
        {"run_id": "run-7", "scenario": "loss", "thresholds": "calibrated", "metric": "peer.precision", "value": 0.25}]


# Properties

HOSTS = ("h1", "h2", "h3")


@st.composite
def faults(draw):
    start_s = draw(st.integers(0, 3000))
    return fault(draw(st.sampled_from(HOSTS)), start_s, start_s + draw(st.integers(1, 60)),
                 draw(st.sampled_from(SUBSYSTEMS)), took_effect=draw(st.booleans()))


@st.composite
def incidents(draw):
    subsystems = draw(st.lists(st.sampled_from(SUBSYSTEMS), max_size=5, unique=True))
    return incident(draw(st.sampled_from(HOSTS)), draw(st.integers(0, 3500)), subsystems,
                    draw(st.sampled_from(["anomaly", "peer", "retransmissions", "regime"])))


def _is_rate(value):
    return math.isnan(value) or 0.0 <= value <= 1.0


@given(st.lists(faults(), min_size=1, max_size=6), st.lists(incidents(), max_size=8), incidents())
def test_rates_stay_in_bounds_and_another_incident_never_lowers_recall(truth, reported, extra):
    before, after = score(truth, reported), score(truth, reported + [extra])
    values = before.figures()
    for name in ("strict_recall", "chance_recall", "precision", "f1", "attribution_top1", "attribution_top3"):
        assert _is_rate(values[name])
    overall = before.overall
    assert overall.detected <= overall.faults and overall.detecting_incidents <= overall.incidents
    assert all(delay >= 0 for delay in overall.delays_s) and len(overall.delays_s) == overall.detected
    assert after.overall.detected >= overall.detected


@given(st.lists(st.tuples(st.lists(faults(), max_size=4), st.lists(incidents(), max_size=4)), max_size=4))
def test_a_suite_counts_what_its_runs_count(runs):
    scores = [score(truth, reported) for truth, reported in runs]
    suite = combine(scores)
    assert suite.overall.faults == sum(run.overall.faults for run in scores)
    assert suite.overall.detected == sum(run.overall.detected for run in scores)
    assert suite.overall.clean_incidents == sum(run.overall.clean_incidents for run in scores)
    assert len(suite.overall.delays_s) == suite.overall.detected
