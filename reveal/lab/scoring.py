"""Strict scores of lab runs: what the pipeline reported against what was injected, judged as an operator would.

- A fault counts only if it took effect (its truth says so). It is detected only by an incident on its host that
  *opens* in its detection interval (detection.py): from the fault's start to DETECTION_GRACE_S after its end, or,
  for a fault already in force when judging starts, within FROM_START_WITHIN_S of that start; an incident already
  open does not count. A configuration difference is detected only by a configuration incident naming its setting.
  The delay runs from the start of the interval.
- Chance recall: the share of faults an incident stream with the run's own incident rate, but blind to the faults,
  would "detect" by the same rule (1 − e^(−λ·L) per fault, λ the run's incidents per host-second, L the fault's
  detection interval), reported beside recall so that a noisy engine cannot pass for a sensitive one.
- Precision: incidents that are right / incidents opened in the judged time of fault runs. Right are those that
  detect a fault (a configuration difference once) and those on other hosts that wait on a faulty host while its
  fault is in force. False alerts per host-hour: incidents opened in the judged time of clean runs / the judged
  host-hours of those runs. Judged time is the same for both: from the end of the baseline to the end of the run.
- Every figure is given for all incidents and by source (host detectors, peer comparison, retransmissions,
  regime notices, configuration).
- Retransmission verdicts are judged per window against per-window truth (the loss rule dropped frames of that
  host inside that window), as balanced accuracy and per-class recall; "none" counts as not fault-induced.
- Attribution: whether the detecting incident names the fault's subsystem first (top-1) or among its first three.

A RunScore keeps the counts behind every ratio, so a suite adds counts instead of averaging ratios. Times are ns
since the epoch, as in truth.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Iterable, Mapping, Sequence

import numpy as np

from reveal.lab.detection import DETECTION_GRACE_S, NS_PER_S, DetectionRules, JudgedTime, waits_on
from reveal.lab.truth import FaultLabel, ReportedIncident, RetransmissionVerdict, RunOutputs
from sinks.tables import LAB_SCORES

SECONDS_PER_HOUR = 3600.0
PACKET_LOSS = "packet_loss"
FAULT_INDUCED, WORKLOAD_INTRINSIC, NO_RETRANSMISSIONS = "fault-induced", "workload-intrinsic", "none"
RETRANSMISSION_CATEGORIES = (WORKLOAD_INTRINSIC, FAULT_INDUCED, NO_RETRANSMISSIONS)
SOURCES = {"anomaly": "host_detectors", "peer": "peer", "retransmissions": "retransmissions", "regime": "regime",
           "configuration": "configuration"}
HEADLINE = ("strict_recall", "chance_recall", "precision", "f1", "delay_p50_s", "false_alerts_per_host_hour",
            "clean_host_hours", "retransmission_balanced_accuracy", "attribution_top1", "faults_took_effect")
COUNT_METRICS = frozenset({"faults", "faults_took_effect", "detected", "incidents", "clean_incidents",
                           "retransmission_windows_judged"})


@dataclass(frozen=True)
class SourceScore:
    """The counts behind the detection figures of one source of incidents (or of all of them)."""

    faults: int = 0
    detected: int = 0
    chance_detected: float = 0.0
    incidents: int = 0
    detecting_incidents: int = 0
    clean_incidents: int = 0
    clean_host_hours: float = 0.0
    delays_s: tuple[float, ...] = ()
    attribution: tuple[tuple[str, int, int, int], ...] = ()

    def __add__(self, other: SourceScore) -> SourceScore:
        return SourceScore(self.faults + other.faults, self.detected + other.detected,
                           self.chance_detected + other.chance_detected, self.incidents + other.incidents,
                           self.detecting_incidents + other.detecting_incidents,
                           self.clean_incidents + other.clean_incidents, self.clean_host_hours + other.clean_host_hours,
                           self.delays_s + other.delays_s, _merged_attribution(self.attribution, other.attribution))

    def figures(self) -> dict[str, float]:
        """Recall, chance recall, precision, F1, delays, false alerts per host-hour and attribution, by name."""
        recall = _ratio(self.detected, self.faults)
        precision = _ratio(self.detecting_incidents, self.incidents)
        top1 = sum(hits for _, _, hits, _ in self.attribution)
        top3 = sum(hits for _, _, _, hits in self.attribution)
        return {"strict_recall": recall, "chance_recall": _ratio(self.chance_detected, self.faults),
                "precision": precision, "f1": _f1(precision, recall),
                "delay_p50_s": _percentile(self.delays_s, 50), "delay_p95_s": _percentile(self.delays_s, 95),
                "false_alerts_per_host_hour": _ratio(self.clean_incidents, self.clean_host_hours),
                "clean_host_hours": self.clean_host_hours, "attribution_top1": _ratio(top1, self.detected),
                "attribution_top3": _ratio(top3, self.detected), "detected": float(self.detected),
                "incidents": float(self.incidents), "clean_incidents": float(self.clean_incidents)}

    def attribution_by_kind(self) -> dict[str, dict[str, float]]:
        """Top-1 and top-3 attribution per fault kind, over the detected faults of that kind."""
        return {kind: {"detected": float(detected), "attribution_top1": _ratio(top1, detected),
                       "attribution_top3": _ratio(top3, detected)}
                for kind, detected, top1, top3 in self.attribution}


@dataclass(frozen=True)
class RetransmissionScore:
    """Confusion counts of retransmission verdicts against per-window truth (positive: fault-induced), with the
    positives split by the loss fraction of the fault that dropped frames in them."""

    true_positive: int = 0
    false_negative: int = 0
    true_negative: int = 0
    false_positive: int = 0
    by_loss: tuple[tuple[float, int, int], ...] = ()

    def __add__(self, other: RetransmissionScore) -> RetransmissionScore:
        counts = [getattr(self, f.name) + getattr(other, f.name) for f in fields(self) if f.name != "by_loss"]
        return RetransmissionScore(*counts, by_loss=_merged_loss_counts(self.by_loss, other.by_loss))

    def figures(self) -> dict[str, float]:
        induced = _ratio(self.true_positive, self.true_positive + self.false_negative)
        intrinsic = _ratio(self.true_negative, self.true_negative + self.false_positive)
        judged = self.true_positive + self.false_negative + self.true_negative + self.false_positive
        figures = {"retransmission_balanced_accuracy": _balanced(induced, intrinsic),
                   "retransmission_recall_fault_induced": induced,
                   "retransmission_recall_workload_intrinsic": intrinsic,
                   "retransmission_windows_judged": float(judged)}
        for loss, found, missed in self.by_loss:
            figures[f"retransmission_balanced_accuracy.loss_{loss * 100:g}%"] = _balanced(
                _ratio(found, found + missed), intrinsic)
        return figures


def _balanced(induced: float, intrinsic: float) -> float:
    return (induced + intrinsic) / 2 if not (math.isnan(induced) or math.isnan(intrinsic)) else math.nan


def _merged_loss_counts(first, second) -> tuple[tuple[float, int, int], ...]:
    counts: dict[float, list[int]] = {}
    for loss, found, missed in (*first, *second):
        counts[loss] = [a + b for a, b in zip(counts.get(loss, [0, 0]), (found, missed))]
    return tuple((loss, *row) for loss, row in sorted(counts.items()))


@dataclass(frozen=True)
class RunScore:
    """Everything scored of one run or, added up, of a suite: all incidents, each source's, retransmissions, and
    the faults that did not take effect (left out of recall)."""

    overall: SourceScore = SourceScore()
    by_source: tuple[tuple[str, SourceScore], ...] = ()
    retransmissions: RetransmissionScore = RetransmissionScore()
    faults_injected: int = 0

    def __add__(self, other: RunScore) -> RunScore:
        sources = dict(self.by_source)
        for name, score in other.by_source:
            sources[name] = sources.get(name, SourceScore()) + score
        return RunScore(self.overall + other.overall, tuple(sorted(sources.items())),
                        self.retransmissions + other.retransmissions, self.faults_injected + other.faults_injected)

    def figures(self) -> dict[str, float]:
        """The headline figures (HEADLINE first), then the rest; NaN where a denominator is empty."""
        figures = {**self.overall.figures(), **self.retransmissions.figures(),
                   "faults": float(self.faults_injected), "faults_took_effect": float(self.overall.faults)}
        return {**{name: figures[name] for name in HEADLINE}, **figures}

    def summary(self) -> dict:
        """What scores.json holds for one threshold mode: the figures, by source, and attribution by fault kind."""
        return {**self.figures(), "by_source": {name: score.figures() for name, score in self.by_source},
                "attribution_by_kind": self.overall.attribution_by_kind()}


def score_run(truth: Sequence[FaultLabel], outputs: RunOutputs, judged: JudgedTime,
              grace_s: float = DETECTION_GRACE_S) -> RunScore:
    """Score one run's outputs against its ground truth by the strict rules of this module.

    >>> fault = FaultLabel("packet_loss", "h1", 100 * NS_PER_S, 120 * NS_PER_S, "network", 0.01)
    >>> late = ReportedIncident("h1", 103 * NS_PER_S, 125 * NS_PER_S, 106 * NS_PER_S, ("network",))
    >>> early = ReportedIncident("h1", 40 * NS_PER_S, 130 * NS_PER_S, 43 * NS_PER_S, ("cpu",))
    >>> figures = score_run([fault], RunOutputs([early, late]), JudgedTime(30 * NS_PER_S, 200 * NS_PER_S, 2)).figures()
    >>> figures["strict_recall"], figures["precision"], figures["delay_p50_s"], figures["attribution_top1"]
    (1.0, 0.5, 6.0, 1.0)
    """
    if not grace_s >= 0:
        raise ValueError(f"grace_s is {grace_s}; expected 0 or more seconds")
    grace_ns = round(grace_s * NS_PER_S)
    effective = [fault for fault in truth if fault.took_effect]
    by_source = {source: score_source(truth, effective, [i for i in outputs.incidents if i.kind == kind], judged,
                                      grace_ns)
                 for kind, source in SOURCES.items()}
    return RunScore(score_source(truth, effective, outputs.incidents, judged, grace_ns),
                    tuple(sorted(by_source.items())), score_retransmissions(truth, outputs.retransmissions),
                    len(truth))


def score_source(truth: Sequence[FaultLabel], effective: Sequence[FaultLabel],
                 incidents: Sequence[ReportedIncident], judged: JudgedTime, grace_ns: int) -> SourceScore:
    """Detection counts of one set of incidents: `effective` are the faults that took effect, `truth` all of them
    (an incident tied only to a fault that did nothing is neither right nor wrong)."""
    opened = [incident for incident in incidents if judged.holds(incident.opened_ns)]
    if not truth:
        return SourceScore(incidents=0, clean_incidents=len(opened), clean_host_hours=judged.host_seconds / 3600)
    rules = DetectionRules(judged, grace_ns)
    firsts = [(fault, rules.first_detecting(fault, incidents)) for fault in effective]
    detections = [(fault, incident) for fault, incident in firsts if incident is not None]
    right = _right_incidents(rules, effective, opened)
    without_effect = [fault for fault in truth if not fault.took_effect]
    judged_incidents = sum(index in right or not any(rules.detects(f, i) or waits_on(f, i) for f in without_effect)
                           for index, i in enumerate(opened))
    rate_per_host_s = len(opened) / judged.host_seconds
    chance = sum(1 - math.exp(-rate_per_host_s * rules.interval_s(f)) for f in effective)
    return SourceScore(faults=len(effective), detected=len(detections), chance_detected=chance,
                       incidents=judged_incidents, detecting_incidents=len(right),
                       delays_s=tuple(rules.delay_s(f, i) for f, i in detections),
                       attribution=_attribution(detections))


def _right_incidents(rules: DetectionRules, faults: Sequence[FaultLabel],
                     opened: Sequence[ReportedIncident]) -> set[int]:
    """Positions of the incidents that are right about one of the faults: credited with detecting it, or on another
    host, waiting on its host while it is in force."""
    right = {index for fault in faults for index in rules.credited(fault, opened)}
    return right | {index for index, incident in enumerate(opened) if any(waits_on(f, incident) for f in faults)}


def _attribution(detections: Sequence[tuple[FaultLabel, ReportedIncident]]) -> tuple[tuple[str, int, int, int], ...]:
    """(fault kind, detected, top-1 hits, top-3 hits) per kind."""
    counts: dict[str, list[int]] = {}
    for fault, incident in detections:
        row = counts.setdefault(fault.fault, [0, 0, 0])
        row[0] += 1
        row[1] += fault.subsystem in incident.subsystems[:1]
        row[2] += fault.subsystem in incident.subsystems[:3]
    return tuple((kind, *row) for kind, row in sorted(counts.items()))


def _merged_attribution(first: tuple, second: tuple) -> tuple[tuple[str, int, int, int], ...]:
    counts: dict[str, list[int]] = {}
    for kind, *row in (*first, *second):
        counts[kind] = [a + b for a, b in zip(counts.get(kind, [0, 0, 0]), row)]
    return tuple((kind, *row) for kind, row in sorted(counts.items()))


def score_retransmissions(truth: Sequence[FaultLabel],
                          verdicts: Sequence[RetransmissionVerdict]) -> RetransmissionScore:
    """Verdicts against per-window truth. A window counts when the classifier saw retransmissions in it or the
    loss rule dropped frames of its host in it; a window with neither has nothing to classify."""
    counts = {"true_positive": 0, "false_negative": 0, "true_negative": 0, "false_positive": 0}
    by_loss: list[tuple[float, int, int]] = []
    for verdict in verdicts:
        said_induced = _category(verdict) == FAULT_INDUCED
        fault = loss_fault_within(truth, verdict.host, verdict.start_ns, verdict.end_ns)
        induced = fault is not None
        if verdict.category == NO_RETRANSMISSIONS and not induced:
            continue
        key = {(True, True): "true_positive", (True, False): "false_negative", (False, False): "true_negative",
               (False, True): "false_positive"}[(induced, said_induced)]
        counts[key] += 1
        if induced:
            by_loss.append((fault.magnitude, int(said_induced), int(not said_induced)))
    return RetransmissionScore(**counts, by_loss=_merged_loss_counts(by_loss, ()))


def loss_dropped_within(truth: Sequence[FaultLabel], host: str, start_ns: int, end_ns: int) -> bool:
    """Whether a packet-loss fault dropped frames of `host` between start_ns and end_ns."""
    return loss_fault_within(truth, host, start_ns, end_ns) is not None


def loss_fault_within(truth: Sequence[FaultLabel], host: str, start_ns: int, end_ns: int) -> FaultLabel | None:
    """The packet-loss fault that dropped frames of `host` between start_ns and end_ns, if any: some interval between
    two samples of its drop counter that overlaps the window saw the counter grow (without samples, the fault's whole
    interval counts when it took effect)."""
    for fault in truth:
        if fault.fault != PACKET_LOSS or fault.host != host:
            continue
        if not fault.drops_timeline:
            if fault.took_effect and start_ns < fault.end_ns and end_ns > fault.start_ns:
                return fault
            continue
        samples = fault.drops_timeline
        for (t0, dropped0), (t1, dropped1) in zip(samples, samples[1:]):
            if dropped1 > dropped0 and t0 < end_ns and t1 > start_ns:
                return fault
    return None


def _category(verdict: RetransmissionVerdict) -> str:
    if verdict.category not in RETRANSMISSION_CATEGORIES:
        raise ValueError(f"retransmission verdict on {verdict.host}: category {verdict.category!r} is not one of "
                         f"{RETRANSMISSION_CATEGORIES}")
    return verdict.category


def score_modes(truth: Sequence[FaultLabel], outputs_by_mode: Mapping[str, RunOutputs],
                judged: JudgedTime) -> dict[str, RunScore]:
    """One RunScore per threshold mode (e.g. 'calibrated', 'paper') of the same run and truth."""
    return {mode: score_run(truth, outputs, judged) for mode, outputs in outputs_by_mode.items()}


def combine(scores: Iterable[RunScore]) -> RunScore:
    """A suite's score: counts summed and delays pooled, so every ratio weighs runs by their events."""
    return sum(scores, RunScore())


def _ratio(part: float, whole: float) -> float:
    return float(part / whole) if whole > 0 else math.nan


def _f1(precision: float, recall: float) -> float:
    if math.isnan(precision) or math.isnan(recall):
        return math.nan
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def _percentile(values: Sequence[float], percent: float) -> float:
    return float(np.percentile(values, percent)) if values else math.nan


def rule_of_three(host_hours: float) -> float:
    """The 95 % upper bound on false alerts per host-hour when none was seen in `host_hours` (3 / exposure)."""
    return 3.0 / host_hours if host_hours > 0 else math.nan


def score_table(summaries_by_mode: Mapping[str, Mapping]) -> str:
    """A fixed-width table for logs: one row per figure (headline first, then each source's recall, precision and
    false alerts), one column per threshold mode.

    >>> print(score_table({"calibrated": {"strict_recall": 0.5, "faults": 4.0},
    ...                    "paper": {"strict_recall": 1.0, "faults": 4.0, "delay_p50_s": math.nan}}))
    figure         calibrated  paper
    strict_recall       0.500  1.000
    faults                  4      4
    delay_p50_s           n/a    n/a
    """
    flat = {mode: _flat_figures(summary) for mode, summary in summaries_by_mode.items()}
    modes = list(flat)
    names = list(dict.fromkeys(name for figures in flat.values() for name in figures))
    rows = [["figure", *modes]] + [[name, *(_format_figure(name, flat[mode].get(name, math.nan)) for mode in modes)]
                                   for name in names]
    widths = [max(len(row[column]) for row in rows) for column in range(len(modes) + 1)]
    return "\n".join("  ".join([row[0].ljust(widths[0])] + [cell.rjust(width) for cell, width
                                                           in zip(row[1:], widths[1:])]) for row in rows)


SOURCE_FIGURES = ("strict_recall", "precision", "false_alerts_per_host_hour", "incidents", "clean_incidents")


def _flat_figures(summary: Mapping) -> dict[str, float]:
    flat = {name: value for name, value in summary.items() if isinstance(value, (int, float))}
    for source, figures in summary.get("by_source", {}).items():
        flat.update({f"{source}.{name}": figures[name] for name in SOURCE_FIGURES if name in figures})
    for kind, figures in summary.get("attribution_by_kind", {}).items():
        flat[f"attribution_top1.{kind}"] = figures["attribution_top1"]
    return flat


def _format_figure(name: str, value: float) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    return str(int(value)) if name.split(".")[-1] in COUNT_METRICS else f"{value:.3f}"


def score_rows(run_id: str, scenario: str, summaries_by_mode: Mapping[str, Mapping]) -> list[list]:
    """Rows for the lab_scores table: each threshold mode's figures, one row per figure."""
    return [LAB_SCORES.row(run_id=run_id, scenario=scenario, thresholds=mode, metric=name, value=float(value))
            for mode, summary in summaries_by_mode.items() for name, value in _flat_figures(summary).items()]


def run_score_from_record(record: dict) -> RunScore:
    """A RunScore back from its JSON form (run_score_record), so stored runs can be combined again."""
    def source(data: dict) -> SourceScore:
        return SourceScore(**{**data, "delays_s": tuple(data["delays_s"]),
                              "attribution": tuple(tuple(row) for row in data["attribution"])})
    return RunScore(source(record["overall"]), tuple((name, source(data)) for name, data in record["by_source"]),
                    retransmission_score(record["retransmissions"]), record["faults_injected"])


def retransmission_score(data: dict) -> RetransmissionScore:
    """A RetransmissionScore back from its JSON form (records written before the split by loss have none)."""
    by_loss = tuple((float(loss), int(found), int(missed)) for loss, found, missed in data.get("by_loss", ()))
    return RetransmissionScore(**{**data, "by_loss": by_loss})


def run_score_record(score: RunScore) -> dict:
    """The counts of a RunScore as JSON-ready data."""
    def source(data: SourceScore) -> dict:
        return {f.name: getattr(data, f.name) for f in fields(data)}
    return {"overall": source(score.overall), "by_source": [[name, source(data)] for name, data in score.by_source],
            "retransmissions": {f.name: getattr(score.retransmissions, f.name) for f in fields(RetransmissionScore)},
            "faults_injected": score.faults_injected}
