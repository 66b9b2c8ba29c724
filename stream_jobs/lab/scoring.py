"""Scores of lab runs: what the pipeline reported against what was injected.

Event-wise precision, recall and F1, detection delay, subsystem attribution, false alerts per host-hour on clean
runs, retransmission classification and window-setting agreement (paper §5.5). A RunScore keeps the counts behind
every ratio, so a suite adds counts instead of averaging ratios. Times are ns since the epoch, as in truth.py.
"""

from __future__ import annotations

import math
from dataclasses import astuple, dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from stream_jobs.lab.truth import FaultLabel, ReportedIncident, ReportedWindow, RetransmissionVerdict, RunOutputs
from stream_jobs.offline.agreement import NO_OVERLAP, Overlap, overlap

NS_PER_S = 1_000_000_000
SECONDS_PER_HOUR = 3600.0
PACKET_LOSS = "packet_loss"
FAULT_INDUCED, WORKLOAD_INTRINSIC, NO_RETRANSMISSIONS = "fault-induced", "workload-intrinsic", "none"
RETRANSMISSION_CATEGORIES = (WORKLOAD_INTRINSIC, FAULT_INDUCED, NO_RETRANSMISSIONS)
REFERENCE_SETTING = "3s/1s"
METRICS = ("precision", "recall", "f1", "delay_p50_s", "delay_p95_s", "attribution_top1", "attribution_top3",
           "false_alerts_per_host_hour", "retransmission_accuracy", "retransmissions_judged", "faults", "found",
           "incidents")
COUNT_METRICS = frozenset({"retransmissions_judged", "faults", "found", "incidents"})


@dataclass(frozen=True)
class RunScore:
    """The counts behind every figure of one run or, added up, of a suite; figures() turns them into ratios.

    `found` counts faults some incident matched and `matched_incidents` counts incidents that matched some fault,
    so recall and precision each have their own numerator. Delays and attribution come from the earliest-opened
    incident matching each found fault. `clean_*` only grow on runs without faults.
    """

    faults: int = 0
    found: int = 0
    incidents: int = 0
    matched_incidents: int = 0
    delays_s: tuple[float, ...] = ()
    attribution_top1_hits: int = 0
    attribution_top3_hits: int = 0
    clean_incidents: int = 0
    clean_host_hours: float = 0.0
    retransmissions_judged: int = 0
    retransmissions_correct: int = 0

    def __add__(self, other: RunScore) -> RunScore:
        return RunScore(*(mine + theirs for mine, theirs in zip(astuple(self), astuple(other))))

    @property
    def missed(self) -> int:
        return self.faults - self.found

    @property
    def false_positives(self) -> int:
        return self.incidents - self.matched_incidents

    def figures(self) -> dict[str, float]:
        """Every figure under its stable name (METRICS order); NaN where the denominator is empty."""
        precision = _ratio(self.matched_incidents, self.incidents)
        recall = _ratio(self.found, self.faults)
        return {"precision": precision, "recall": recall, "f1": _f1(precision, recall),
                "delay_p50_s": _percentile(self.delays_s, 50), "delay_p95_s": _percentile(self.delays_s, 95),
                "attribution_top1": _ratio(self.attribution_top1_hits, self.found),
                "attribution_top3": _ratio(self.attribution_top3_hits, self.found),
                "false_alerts_per_host_hour": _ratio(self.clean_incidents, self.clean_host_hours),
                "retransmission_accuracy": _ratio(self.retransmissions_correct, self.retransmissions_judged),
                "retransmissions_judged": float(self.retransmissions_judged),
                "faults": float(self.faults), "found": float(self.found), "incidents": float(self.incidents)}


def score_run(truth: Sequence[FaultLabel], outputs: RunOutputs, *, hosts: int, duration_s: float,
              tolerance_s: float = 5.0) -> RunScore:
    """Score one run's outputs against its ground truth.

    An incident matches a fault when it is on the fault's host and overlaps [start, end + tolerance): windows are
    3 s long and lag behind, so an incident may open just after the fault stopped. A run without faults is a clean
    run: its incidents are false alerts over `hosts` × `duration_s`. A delay is the earliest-opened matching
    incident's opened_ns minus the fault's start, clamped to 0 when that incident was already open at the start.

    >>> fault = FaultLabel("packet_loss", "h1", 10 * NS_PER_S, 20 * NS_PER_S, "network", 0.02)
    >>> hit = ReportedIncident("h1", 12 * NS_PER_S, 21 * NS_PER_S, 14 * NS_PER_S, ("network", "cpu"))
    >>> stray = ReportedIncident("h2", 12 * NS_PER_S, 15 * NS_PER_S, 15 * NS_PER_S, ("cpu",))
    >>> figures = score_run([fault], RunOutputs(incidents=[hit, stray]), hosts=2, duration_s=60).figures()
    >>> figures["recall"], figures["precision"], figures["delay_p50_s"], figures["attribution_top1"]
    (1.0, 0.5, 4.0, 1.0)
    """
    _check_run_size(hosts, duration_s, tolerance_s)
    tolerance_ns = round(tolerance_s * NS_PER_S)
    return (_event_score(truth, outputs.incidents, tolerance_ns)
            + _clean_score(truth, outputs.incidents, hosts, duration_s)
            + _retransmission_score(truth, outputs.retransmissions))


def score_modes(truth: Sequence[FaultLabel], outputs_by_mode: Mapping[str, RunOutputs], *, hosts: int,
                duration_s: float, tolerance_s: float = 5.0) -> dict[str, RunScore]:
    """One RunScore per threshold mode (e.g. 'calibrated', 'paper') of the same run and truth."""
    return {mode: score_run(truth, outputs, hosts=hosts, duration_s=duration_s, tolerance_s=tolerance_s)
            for mode, outputs in outputs_by_mode.items()}


def combine(scores: Iterable[RunScore]) -> RunScore:
    """A suite's score: counts summed and delays pooled, so every ratio weighs runs by their events."""
    return sum(scores, RunScore())


def _check_run_size(hosts: int, duration_s: float, tolerance_s: float) -> None:
    if hosts < 1:
        raise ValueError(f"hosts is {hosts}; a run has at least one host")
    if not duration_s > 0:
        raise ValueError(f"duration_s is {duration_s}; a run lasts a positive number of seconds")
    if not tolerance_s >= 0:
        raise ValueError(f"tolerance_s is {tolerance_s}; expected 0 or more seconds")


def _event_score(truth: Sequence[FaultLabel], incidents: Sequence[ReportedIncident], tolerance_ns: int) -> RunScore:
    earliest = [(fault, _earliest_match(fault, incidents, tolerance_ns)) for fault in truth]
    found = [(fault, incident) for fault, incident in earliest if incident is not None]
    matched = sum(any(_matches(fault, incident, tolerance_ns) for fault in truth) for incident in incidents)
    return RunScore(faults=len(truth), found=len(found), incidents=len(incidents), matched_incidents=matched,
                    delays_s=tuple(_delay_s(fault, incident) for fault, incident in found),
                    attribution_top1_hits=sum(_ranked_within(fault, incident, 1) for fault, incident in found),
                    attribution_top3_hits=sum(_ranked_within(fault, incident, 3) for fault, incident in found))


def _ranked_within(fault: FaultLabel, incident: ReportedIncident, places: int) -> bool:
    """Whether the incident names the fault's subsystem among its first `places` subsystems."""
    return fault.subsystem in incident.subsystems[:places]


def _matches(fault: FaultLabel, incident: ReportedIncident, tolerance_ns: int) -> bool:
    return (incident.host == fault.host and incident.start_ns < fault.end_ns + tolerance_ns
            and incident.end_ns > fault.start_ns)


def _earliest_match(fault: FaultLabel, incidents: Sequence[ReportedIncident],
                    tolerance_ns: int) -> ReportedIncident | None:
    matching = [incident for incident in incidents if _matches(fault, incident, tolerance_ns)]
    return min(matching, key=lambda incident: (incident.opened_ns, incident.start_ns), default=None)


def _delay_s(fault: FaultLabel, incident: ReportedIncident) -> float:
    return max(0, incident.opened_ns - fault.start_ns) / NS_PER_S


def _clean_score(truth: Sequence[FaultLabel], incidents: Sequence[ReportedIncident], hosts: int,
                 duration_s: float) -> RunScore:
    if truth:
        return RunScore()
    return RunScore(clean_incidents=len(incidents), clean_host_hours=hosts * duration_s / SECONDS_PER_HOUR)


def _retransmission_score(truth: Sequence[FaultLabel], verdicts: Sequence[RetransmissionVerdict]) -> RunScore:
    judged = [verdict for verdict in verdicts if _category(verdict) != NO_RETRANSMISSIONS]
    correct = sum(verdict.category == _expected_category(verdict, truth) for verdict in judged)
    return RunScore(retransmissions_judged=len(judged), retransmissions_correct=correct)


def _category(verdict: RetransmissionVerdict) -> str:
    if verdict.category not in RETRANSMISSION_CATEGORIES:
        raise ValueError(f"retransmission verdict on {verdict.host}: category {verdict.category!r} is not one of "
                         f"{RETRANSMISSION_CATEGORIES}")
    return verdict.category


def _expected_category(verdict: RetransmissionVerdict, truth: Sequence[FaultLabel]) -> str:
    """Fault-induced while the window shares time with a network packet-loss fault on its host."""
    induced = any(fault.host == verdict.host and fault.subsystem == "network" and fault.fault == PACKET_LOSS
                  and verdict.start_ns < fault.end_ns and verdict.end_ns > fault.start_ns for fault in truth)
    return FAULT_INDUCED if induced else WORKLOAD_INTRINSIC


def _ratio(part: float, whole: float) -> float:
    return float(part / whole) if whole > 0 else math.nan


def _f1(precision: float, recall: float) -> float:
    if math.isnan(precision) or math.isnan(recall):
        return math.nan
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def _percentile(values: Sequence[float], percent: float) -> float:
    return float(np.percentile(values, percent)) if values else math.nan


def window_agreement(windows_by_setting: Mapping[str, Sequence[ReportedWindow]],
                     reference: str = REFERENCE_SETTING) -> dict[str, float]:
    """§5.5 agreement of each window setting with the reference setting on the same run, pooled over hosts.

    For each other setting S: `agreement_S_iou`; `agreement_S_hit_count` and `_hit_length`, the share of the
    reference's flagged segments (by count, by length) that S also flags; and the same from S's side with the
    suffix `_reverse`. Flagged windows are merged per host; only the same host's intervals can agree.
    """
    if reference not in windows_by_setting:
        raise ValueError(f"reference setting {reference!r} is not among {list(windows_by_setting)}")
    reference_spans = _flagged_spans_by_host(windows_by_setting[reference])
    figures: dict[str, float] = {}
    for setting, windows in windows_by_setting.items():
        if setting != reference:
            pooled = _pooled_overlap(reference_spans, _flagged_spans_by_host(windows))
            figures.update(_agreement_figures(setting, pooled))
    return figures


def _flagged_spans_by_host(windows: Iterable[ReportedWindow]) -> dict[str, list[tuple[int, int]]]:
    spans: dict[str, list[tuple[int, int]]] = {}
    for window in windows:
        if window.flagged:
            spans.setdefault(window.host, []).append((window.start_ns, window.end_ns))
    return spans


def _pooled_overlap(spans_a: Mapping[str, list[tuple[int, int]]],
                    spans_b: Mapping[str, list[tuple[int, int]]]) -> Overlap:
    hosts = set(spans_a) | set(spans_b)
    return sum((overlap(spans_a.get(host, []), spans_b.get(host, [])) for host in hosts), NO_OVERLAP)


def _agreement_figures(setting: str, reference_to_setting: Overlap) -> dict[str, float]:
    setting_to_reference = reference_to_setting.swapped()
    prefix = f"agreement_{setting}"
    return {f"{prefix}_iou": reference_to_setting.iou,
            f"{prefix}_hit_count": reference_to_setting.hit_rate_by_count,
            f"{prefix}_hit_length": reference_to_setting.hit_rate_by_length,
            f"{prefix}_hit_count_reverse": setting_to_reference.hit_rate_by_count,
            f"{prefix}_hit_length_reverse": setting_to_reference.hit_rate_by_length}


def score_table(figures_by_mode: Mapping[str, Mapping[str, float]]) -> str:
    """A fixed-width table for logs: one row per metric (first-seen order), one column per threshold mode.

    >>> print(score_table({"calibrated": {"recall": 0.5, "faults": 4.0},
    ...                    "paper": {"recall": 1.0, "faults": 4.0, "delay_p50_s": math.nan}}))
    metric       calibrated  paper
    recall            0.500  1.000
    faults                4      4
    delay_p50_s         n/a    n/a
    """
    modes = list(figures_by_mode)
    metrics = list(dict.fromkeys(metric for figures in figures_by_mode.values() for metric in figures))
    rows = [["metric", *modes]] + [[metric, *(_format_figure(metric, figures_by_mode[mode].get(metric, math.nan))
                                              for mode in modes)] for metric in metrics]
    widths = [max(len(row[column]) for row in rows) for column in range(len(modes) + 1)]
    return "\n".join("  ".join([row[0].ljust(widths[0])] + [cell.rjust(width) for cell, width
                                                           in zip(row[1:], widths[1:])]) for row in rows)


def _format_figure(metric: str, value: float) -> str:
    if math.isnan(value):
        return "n/a"
    return str(int(value)) if metric in COUNT_METRICS else f"{value:.3f}"


def score_rows(run_id: str, scenario: str, figures_by_mode: Mapping[str, Mapping[str, float]]) -> list[list]:
    """Rows for the lab_scores table, in its column order (run_id, scenario, thresholds, metric, value)."""
    return [[run_id, scenario, mode, metric, float(value)]
            for mode, figures in figures_by_mode.items() for metric, value in figures.items()]
