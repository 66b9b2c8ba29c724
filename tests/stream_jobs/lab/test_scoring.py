import math

import pytest
from hypothesis import given, strategies as st

from sinks.clickhouse import LAB_SCORE_COLUMNS
from stream_jobs.lab.scoring import (RunScore, combine, score_modes, score_rows, score_run, score_table,
                                     window_agreement)
from stream_jobs.lab.truth import (SUBSYSTEMS, FaultLabel, ReportedIncident, ReportedWindow, RetransmissionVerdict,
                                   RunOutputs)

S = 1_000_000_000
T0_NS = 1_700_000_000 * S
HOUR_S = 3600


def fault(host, start_s, end_s, subsystem="cpu", kind="cpu_stress"):
    return FaultLabel(kind, host, T0_NS + round(start_s * S), T0_NS + round(end_s * S), subsystem, 1.0)


def incident(host, start_s, end_s, opened_s=None, subsystems=("cpu",)):
    opened_s = start_s + 3 if opened_s is None else opened_s
    return ReportedIncident(host, T0_NS + round(start_s * S), T0_NS + round(end_s * S), T0_NS + round(opened_s * S),
                            tuple(subsystems))


def verdict(host, start_s, end_s, category):
    return RetransmissionVerdict(host, T0_NS + round(start_s * S), T0_NS + round(end_s * S), category)


def window(host, start_s, end_s, flagged=True):
    return ReportedWindow(host, T0_NS + round(start_s * S), T0_NS + round(end_s * S), flagged)


def score(truth, incidents=(), retransmissions=(), hosts=3, duration_s=HOUR_S, **options):
    outputs = RunOutputs(incidents=list(incidents), retransmissions=list(retransmissions))
    return score_run(truth, outputs, hosts=hosts, duration_s=duration_s, **options)


# Event-wise precision, recall and F1


def test_two_of_three_faults_found_and_one_incident_on_the_wrong_host():
    truth = [fault("h1", 10, 40), fault("h2", 10, 40), fault("h3", 100, 130)]
    # The third incident covers h3's fault in time but sits on h1.
    reported = [incident("h1", 12, 30), incident("h2", 20, 45), incident("h1", 105, 120)]
    result = score(truth, reported)
    figures = result.figures()
    assert figures["recall"] == pytest.approx(2 / 3)
    assert figures["precision"] == pytest.approx(2 / 3)
    assert figures["f1"] == pytest.approx(2 / 3)
    assert (result.found, result.missed, result.matched_incidents, result.false_positives) == (2, 1, 2, 1)


def test_f1_is_the_harmonic_mean_of_unequal_precision_and_recall():
    # Recall 1/2, precision 1/1: F1 = 2·(1/2)·1 / (3/2) = 2/3.
    figures = score([fault("h1", 0, 10), fault("h2", 0, 10)], [incident("h1", 1, 5)]).figures()
    assert (figures["recall"], figures["precision"]) == (0.5, 1.0)
    assert figures["f1"] == pytest.approx(2 / 3)


def test_nothing_found_gives_zero_f1_and_no_incidents_gives_undefined_precision():
    figures = score([fault("h1", 0, 10)]).figures()
    assert figures["recall"] == 0.0
    assert math.isnan(figures["precision"]) and math.isnan(figures["f1"])
    missed_everything = score([fault("h1", 0, 10)], [incident("h2", 0, 10)]).figures()
    assert (missed_everything["precision"], missed_everything["recall"], missed_everything["f1"]) == (0, 0, 0)


def test_two_incidents_on_one_fault_find_it_once_and_are_both_true_positives():
    result = score([fault("h1", 0, 60)], [incident("h1", 5, 10), incident("h1", 30, 40)])
    assert (result.faults, result.found, result.incidents, result.matched_incidents) == (1, 1, 2, 2)
    assert result.figures()["precision"] == 1.0


def test_one_incident_spanning_two_faults_finds_both():
    result = score([fault("h1", 0, 10), fault("h1", 20, 30)], [incident("h1", 5, 25)])
    assert (result.found, result.matched_incidents) == (2, 1)


@pytest.mark.parametrize("incident_start_s, tolerance_s, is_found", [
    (19.0, 5.0, True),             # inside the fault
    (24.999999999, 5.0, True),     # one nanosecond inside the tolerance
    (25.0, 5.0, False),            # exactly at the fault's end + tolerance
    (20.0, 0.0, False),            # starts as the fault ends, no tolerance
    (21.0, 2.0, True),
    (21.0, 1.0, False),
])
def test_tolerance_after_the_fault_end(incident_start_s, tolerance_s, is_found):
    result = score([fault("h1", 10, 20)], [incident("h1", incident_start_s, incident_start_s + 3)],
                   tolerance_s=tolerance_s)
    assert result.found == int(is_found) and result.matched_incidents == int(is_found)


def test_no_tolerance_before_the_fault_start():
    # An incident that closed exactly as the fault started shares no time with it.
    result = score([fault("h1", 10, 20)], [incident("h1", 0, 10)], tolerance_s=5.0)
    assert result.found == 0


def test_run_size_and_tolerance_are_validated():
    with pytest.raises(ValueError, match="hosts is 0"):
        score([], hosts=0)
    with pytest.raises(ValueError, match="duration_s is 0"):
        score([], duration_s=0)
    with pytest.raises(ValueError, match="tolerance_s is -1"):
        score([], tolerance_s=-1)


# Detection delay


def test_delay_median_and_p95_over_found_faults():
    truth = [fault(f"h{n}", 0, 60) for n in range(5)]
    reported = [incident(f"h{n}", 0, 30, opened_s=opened) for n, opened in enumerate([1, 2, 3, 4, 10])]
    figures = score(truth, reported).figures()
    assert figures["delay_p50_s"] == pytest.approx(3.0)
    # Linear interpolation at rank 0.95 · 4 = 3.8 between 4 s and 10 s.
    assert figures["delay_p95_s"] == pytest.approx(8.8)


def test_delay_uses_the_earliest_opened_matching_incident():
    reported = [incident("h1", 20, 30, opened_s=22), incident("h1", 11, 15, opened_s=13)]
    assert score([fault("h1", 10, 40)], reported).delays_s == (3.0,)


def test_an_incident_open_before_the_fault_gives_zero_delay():
    assert score([fault("h1", 10, 40)], [incident("h1", 0, 30, opened_s=3)]).delays_s == (0.0,)


def test_delays_are_undefined_without_found_faults():
    figures = score([fault("h1", 0, 10)]).figures()
    assert math.isnan(figures["delay_p50_s"]) and math.isnan(figures["delay_p95_s"])


# Attribution


def test_attribution_top1_and_top3():
    truth = [fault("h1", 0, 10, "network"), fault("h2", 0, 10, "network"), fault("h3", 0, 10, "network")]
    reported = [incident("h1", 0, 10, subsystems=("network", "cpu")),
                incident("h2", 0, 10, subsystems=("cpu", "gpu", "network")),
                incident("h3", 0, 10, subsystems=("cpu", "gpu", "memory", "network"))]
    figures = score(truth, reported).figures()
    assert figures["attribution_top1"] == pytest.approx(1 / 3)
    assert figures["attribution_top3"] == pytest.approx(2 / 3)


def test_attribution_is_judged_on_the_earliest_matching_incident_over_found_faults_only():
    truth = [fault("h1", 10, 40, "memory"), fault("h2", 10, 40, "memory")]
    reported = [incident("h1", 11, 20, opened_s=14, subsystems=("cpu",)),
                incident("h1", 21, 30, opened_s=24, subsystems=("memory",))]
    figures = score(truth, reported).figures()
    assert (figures["attribution_top1"], figures["attribution_top3"]) == (0.0, 0.0)


def test_an_incident_without_subsystems_attributes_nothing():
    figures = score([fault("h1", 0, 10)], [incident("h1", 0, 10, subsystems=())]).figures()
    assert figures["attribution_top1"] == 0.0 and figures["recall"] == 1.0


# False alerts on clean runs


def test_clean_run_false_alerts_per_host_hour():
    # 2 hosts × 30 min = 1 host-hour; 4 incidents.
    figures = score([], [incident("h1", 0, 5), incident("h1", 100, 105), incident("h2", 7, 9),
                         incident("h2", 400, 410)], hosts=2, duration_s=1800).figures()
    assert figures["false_alerts_per_host_hour"] == pytest.approx(4.0)
    assert figures["precision"] == 0.0 and math.isnan(figures["recall"])


def test_a_quiet_clean_run_has_zero_false_alerts():
    assert score([], hosts=4, duration_s=600).figures()["false_alerts_per_host_hour"] == 0.0


def test_false_alerts_are_undefined_without_a_clean_run_and_fault_runs_do_not_add_to_them():
    fault_run = score([fault("h1", 0, 10)], [incident("h2", 100, 110)] * 5, hosts=3, duration_s=HOUR_S)
    assert math.isnan(fault_run.figures()["false_alerts_per_host_hour"])
    clean_run = score([], [incident("h1", 0, 5)], hosts=1, duration_s=HOUR_S / 2)
    assert combine([fault_run, clean_run]).figures()["false_alerts_per_host_hour"] == pytest.approx(2.0)


# Retransmission classification


def test_retransmission_accuracy_over_judged_verdicts():
    truth = [fault("h1", 10, 20, "network", "packet_loss"), fault("h2", 10, 20, "network", "bandwidth_limit")]
    verdicts = [verdict("h1", 12, 15, "fault-induced"),          # right: packet loss on h1
                verdict("h1", 17, 20, "workload-intrinsic"),     # wrong: still inside the loss
                verdict("h1", 20, 23, "fault-induced"),          # wrong: starts as the loss ends
                verdict("h2", 12, 15, "workload-intrinsic"),     # right: a network fault, but not packet loss
                verdict("h3", 12, 15, "workload-intrinsic"),     # right: no fault on h3
                verdict("h1", 13, 16, "none")]                   # not judged
    figures = score(truth, retransmissions=verdicts).figures()
    assert figures["retransmissions_judged"] == 5
    assert figures["retransmission_accuracy"] == pytest.approx(3 / 5)


def test_packet_loss_filed_under_another_subsystem_does_not_make_retransmissions_fault_induced():
    truth = [fault("h1", 10, 20, "cpu", "packet_loss")]
    figures = score(truth, retransmissions=[verdict("h1", 12, 15, "fault-induced")]).figures()
    assert figures["retransmission_accuracy"] == 0.0


def test_retransmission_accuracy_is_undefined_when_nothing_was_judged():
    figures = score([], retransmissions=[verdict("h1", 0, 3, "none")]).figures()
    assert figures["retransmissions_judged"] == 0 and math.isnan(figures["retransmission_accuracy"])


def test_an_unknown_retransmission_category_is_rejected():
    with pytest.raises(ValueError, match="'lossy' is not one of"):
        score([], retransmissions=[verdict("h1", 0, 3, "lossy")])


# Suites and threshold modes


def test_a_suite_sums_counts_rather_than_averaging_ratios():
    small = score([fault("h1", 0, 10)], [incident("h1", 0, 10)])
    large = score([fault("h1", 0, 10), fault("h2", 0, 10), fault("h3", 0, 10)],
                  [incident("h1", 50, 60), incident("h2", 50, 60), incident("h3", 50, 60)])
    figures = combine([small, large]).figures()
    # Averaging the runs' ratios would give (1 + 0) / 2 = 0.5 for both.
    assert figures["recall"] == pytest.approx(1 / 4)
    assert figures["precision"] == pytest.approx(1 / 4)
    assert (figures["faults"], figures["found"], figures["incidents"]) == (4, 1, 4)


def test_a_suite_pools_delays():
    first = score([fault("h1", 0, 60)], [incident("h1", 0, 30, opened_s=2)])
    second = score([fault("h1", 0, 60), fault("h2", 0, 60)],
                   [incident("h1", 0, 30, opened_s=4), incident("h2", 0, 30, opened_s=9)])
    suite = combine([first, second])
    assert sorted(suite.delays_s) == [2.0, 4.0, 9.0]
    assert suite.figures()["delay_p50_s"] == 4.0


def test_an_empty_suite_has_no_figures():
    figures = combine([]).figures()
    assert figures["faults"] == 0
    assert all(math.isnan(figures[name]) for name in ("precision", "recall", "f1", "delay_p50_s",
                                                      "false_alerts_per_host_hour", "retransmission_accuracy"))


def test_figures_have_stable_names():
    assert list(RunScore().figures()) == [
        "precision", "recall", "f1", "delay_p50_s", "delay_p95_s", "attribution_top1", "attribution_top3",
        "false_alerts_per_host_hour", "retransmission_accuracy", "retransmissions_judged", "faults", "found",
        "incidents"]


def test_each_threshold_mode_is_scored_on_its_own_outputs():
    truth = [fault("h1", 10, 20)]
    scores = score_modes(truth, {"calibrated": RunOutputs(incidents=[incident("h1", 12, 18)]),
                                 "paper": RunOutputs(incidents=[incident("h1", 12, 18), incident("h2", 0, 3)])},
                         hosts=2, duration_s=60)
    assert list(scores) == ["calibrated", "paper"]
    assert scores["calibrated"].figures()["precision"] == 1.0
    assert scores["paper"].figures()["precision"] == 0.5


# Window-setting agreement


def test_identical_settings_agree_fully():
    windows = [window("h1", 0, 3), window("h1", 1, 4), window("h2", 10, 13), window("h2", 20, 23, flagged=False)]
    figures = window_agreement({"3s/1s": windows, "5s/2s": list(windows)})
    assert figures == {"agreement_5s/2s_iou": 1.0, "agreement_5s/2s_hit_count": 1.0,
                       "agreement_5s/2s_hit_length": 1.0, "agreement_5s/2s_hit_count_reverse": 1.0,
                       "agreement_5s/2s_hit_length_reverse": 1.0}


def test_disjoint_settings_do_not_agree():
    figures = window_agreement({"3s/1s": [window("h1", 0, 3)], "1.5s/0.5s": [window("h1", 10, 11.5)]})
    assert set(figures.values()) == {0.0}


def test_the_same_time_on_different_hosts_does_not_agree():
    figures = window_agreement({"3s/1s": [window("h1", 0, 3)], "1.5s/0.5s": [window("h2", 0, 3)]})
    assert figures["agreement_1.5s/0.5s_iou"] == 0.0


def test_agreement_is_pooled_over_hosts_in_both_directions():
    # Reference: h1 [0,4), h2 [10,13) → 7 s in 2 segments. Setting: h1 [2,6), h2 [20,22) → 6 s in 2 segments.
    # Shared: h1 [2,4) = 2 s. Pooled IoU = 2 / (7 + 6 − 2); averaging per host would give (1/3 + 0) / 2.
    reference = [window("h1", 0, 3), window("h1", 1, 4), window("h2", 10, 13), window("h1", 30, 33, flagged=False)]
    setting = [window("h1", 2, 5), window("h1", 5, 6), window("h2", 20, 22)]
    figures = window_agreement({"1.5s/0.5s": setting, "3s/1s": reference})
    assert figures["agreement_1.5s/0.5s_iou"] == pytest.approx(2 / 11)
    assert figures["agreement_1.5s/0.5s_hit_count"] == pytest.approx(1 / 2)
    assert figures["agreement_1.5s/0.5s_hit_length"] == pytest.approx(2 / 7)
    assert figures["agreement_1.5s/0.5s_hit_count_reverse"] == pytest.approx(1 / 2)
    assert figures["agreement_1.5s/0.5s_hit_length_reverse"] == pytest.approx(2 / 6)


def test_every_setting_is_compared_with_the_reference():
    windows = [window("h1", 0, 3)]
    figures = window_agreement({"3s/1s": windows, "1.5s/0.5s": windows, "5s/2s": []})
    assert {name.rsplit("_", 1)[0] for name in figures if name.endswith("_iou")} == {
        "agreement_1.5s/0.5s", "agreement_5s/2s"}
    assert figures["agreement_5s/2s_iou"] == 0.0 and figures["agreement_5s/2s_hit_count_reverse"] == 0.0


def test_a_missing_reference_setting_is_an_error():
    with pytest.raises(ValueError, match=r"reference setting '3s/1s' is not among \['5s/2s'\]"):
        window_agreement({"5s/2s": []})


# Printing and storing


def test_score_table_lays_modes_side_by_side():
    table = score_table({"calibrated": {"precision": 2 / 3, "faults": 12.0, "false_alerts_per_host_hour": math.nan},
                         "paper": {"precision": 0.25, "faults": 12.0, "false_alerts_per_host_hour": 1.5}})
    lines = table.splitlines()
    assert lines[0].split() == ["metric", "calibrated", "paper"]
    assert [line.split() for line in lines[1:]] == [["precision", "0.667", "0.250"], ["faults", "12", "12"],
                                                    ["false_alerts_per_host_hour", "n/a", "1.500"]]
    assert len({len(line) for line in lines}) == 1


def test_score_table_marks_a_metric_one_mode_lacks():
    lines = score_table({"calibrated": {"recall": 1.0}, "paper": {"recall": 0.5, "f1": 0.5}}).splitlines()
    assert lines[2].split() == ["f1", "n/a", "0.500"]


def test_score_rows_match_the_lab_scores_columns():
    rows = score_rows("run-7", "packet_loss", {"calibrated": {"recall": 0.5, "faults": 2.0},
                                               "paper": {"recall": 1.0}})
    assert all(len(row) == len(LAB_SCORE_COLUMNS) for row in rows)
    assert [dict(zip(LAB_SCORE_COLUMNS, row)) for row in rows] == [
        {"run_id": "run-7", "scenario": "packet_loss", "thresholds": "calibrated", "metric": "recall", "value": 0.5},
        {"run_id": "run-7", "scenario": "packet_loss", "thresholds": "calibrated", "metric": "faults", "value": 2.0},
        {"run_id": "run-7", "scenario": "packet_loss", "thresholds": "paper", "metric": "recall", "value": 1.0}]


# Properties

HOSTS = ("h1", "h2", "h3")


@st.composite
def faults(draw):
    start_s = draw(st.integers(0, 300))
    return fault(draw(st.sampled_from(HOSTS)), start_s, start_s + draw(st.integers(1, 60)),
                 draw(st.sampled_from(SUBSYSTEMS)))


@st.composite
def incidents(draw):
    start_s = draw(st.integers(0, 300))
    end_s = start_s + draw(st.integers(1, 60))
    subsystems = draw(st.lists(st.sampled_from(SUBSYSTEMS), max_size=5, unique=True))
    return incident(draw(st.sampled_from(HOSTS)), start_s, end_s, draw(st.integers(start_s, end_s)), subsystems)


def _is_rate(value):
    return math.isnan(value) or 0.0 <= value <= 1.0


@given(st.lists(faults(), max_size=6), st.lists(incidents(), max_size=8), incidents())
def test_rates_stay_in_bounds_and_another_incident_never_lowers_recall(truth, reported, extra):
    before = score(truth, reported)
    after = score(truth, reported + [extra])
    for name in ("precision", "recall", "f1", "attribution_top1", "attribution_top3"):
        assert _is_rate(before.figures()[name])
    assert before.found <= before.faults and before.matched_incidents <= before.incidents
    assert before.attribution_top1_hits <= before.attribution_top3_hits <= before.found
    assert all(delay >= 0 for delay in before.delays_s) and len(before.delays_s) == before.found
    assert after.found >= before.found


@given(st.lists(st.tuples(st.lists(faults(), max_size=4), st.lists(incidents(), max_size=4)), max_size=4))
def test_a_suite_counts_what_its_runs_count(runs):
    scores = [score(truth, reported) for truth, reported in runs]
    suite = combine(scores)
    assert suite.faults == sum(run.faults for run in scores)
    assert suite.found == sum(run.found for run in scores)
    assert suite.false_positives == sum(run.false_positives for run in scores)
    assert len(suite.delays_s) == suite.found
