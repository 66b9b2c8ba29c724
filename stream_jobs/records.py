"""The stages' records from the engine's results: window, baseline and retransmission rows, anomalies, alerts and
host-window summaries, built in one place so that the host and cluster stages tell their findings alike."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from schemas.channels import TCP_RETRANSMITS, subsystem_for
from schemas.records import DEPARTS_AT, Alert, Anomaly, Catalog, Evidence, HostWindow, PersistedChannel
from stream_jobs.engine.crosshost import ConfigurationDifference, PeerDeviation
from stream_jobs.engine.host_pipeline import HostPipeline
from stream_jobs.engine.decide.incidents import AlertEvent
from stream_jobs.engine.retransmissions import RetransVerdict
from stream_jobs.engine.signatures import match_signature
from stream_jobs.engine.verdicts import WindowContext, WindowVerdict


# The regime of a window in which Reveal's own commands ran: its findings are not the host's (see host_window)
OWN_ACTIVITY_REGIME = "reveal commands"


@dataclass
class StageOutput:
    """What one input to a stage produced: rows for storage and records to publish. The host stage fills the
    windows, baselines and host-window summaries, the cluster stage the retransmission verdicts; both, anomalies
    and alerts."""

    window_rows: list[list] = field(default_factory=list)
    anomalies: list[Anomaly] = field(default_factory=list)
    alerts: list[Alert] = field(default_factory=list)
    host_windows: list[HostWindow] = field(default_factory=list)
    baseline_rows: list[list] = field(default_factory=list)
    verdicts: list[WindowVerdict] = field(default_factory=list)
    retransmission_rows: list[list] = field(default_factory=list)

    def extend(self, other: "StageOutput") -> None:
        for name in self.__dataclass_fields__:
            getattr(self, name).extend(getattr(other, name))


def window_row(catalog: Catalog, verdict: WindowVerdict) -> list:
    names = list(verdict.detector_scores)
    return [catalog.host, catalog.cluster, verdict.window_id, verdict.start_ns, verdict.end_ns, verdict.frames,
            int(verdict.baseline_ready), finite_or_zero(verdict.score), finite_or_zero(verdict.threshold),
            int(verdict.anomalous), names, [finite_or_zero(verdict.detector_scores[n]) for n in names],
            [finite_or_zero(verdict.detector_thresholds[n]) for n in names], list(verdict.detectors),
            OWN_ACTIVITY_REGIME if verdict.own_activity else ""]


def anomaly_record(catalog: Catalog, verdict: WindowVerdict) -> Anomaly:
    evidence = tuple(Evidence(c.channel, c.feature, c.value, c.baseline_mean, c.baseline_std, c.z)
                     for c in verdict.evidence)
    signature = match_signature([(c.channel, c.feature, c.z) for c in verdict.evidence])
    return Anomaly(catalog.host, catalog.cluster, verdict.window_id, verdict.start_ns, verdict.end_ns,
                   verdict.detectors, verdict.score, verdict.threshold, verdict.subsystem, verdict.claim, evidence,
                   verdict.explanation, signature.hint if signature else "")


def alert_record(event: AlertEvent, cluster: str) -> Alert:
    return Alert(event.alert_id, event.host, cluster, event.state, event.start_ns, event.end_ns,
                 finite_or_zero(event.severity), event.subsystem, event.summary, event.hint, event.kind)


def host_window(catalog: Catalog, pipeline: HostPipeline, verdict: WindowVerdict, settling: bool = False) -> HostWindow:
    """The window's summary for the cluster stage; while the host settles after a workload change, or Reveal's own
    commands load it, its channels' departures are not handed on as findings."""
    context = verdict.context or WindowContext()
    watch = verdict.watch
    persisted = () if watch is None or settling else window_findings(pipeline, verdict)
    return HostWindow(catalog.host, catalog.cluster, verdict.window_id, verdict.start_ns, verdict.end_ns,
                      catalog.version, pipeline.signal_names, verdict.channel_means, verdict.anomalous and not settling,
                      finite_or_zero(verdict.score), context.retransmits, context.segments_out,
                      context.traffic_burstiness, context.irq_z, context.cpu_freq_z, context.gpu_power_z,
                      None if watch is None else outside_band(pipeline.columns.departures(watch)), persisted,
                      pipeline.signal_kinds)


def outside_band(departures: np.ndarray) -> np.ndarray:
    """The departures a summary hands on: 0 for a channel inside its band, where its reader learns nothing from
    how far inside; a summary's departures are then mostly zeros, which its batch compresses to almost nothing."""
    handed_on = np.asarray(departures, dtype=np.float32)  # judged as its reader sees it, after the cast
    return np.where(np.abs(handed_on) >= DEPARTS_AT, handed_on, np.float32(0.0))


def window_findings(pipeline: HostPipeline, verdict: WindowVerdict) -> tuple[PersistedChannel, ...]:
    """The window's findings for the decision: its persisted channels, or where the trio flagged it (see
    decide.window), its evidence channels, each as far out as the trio's severity scaled by its share of the
    strongest evidence's z, and only those at least at the edge."""
    if verdict.watch.flagged:
        return persisted_signals(pipeline, verdict.watch)
    if not verdict.anomalous or not verdict.evidence:
        return ()
    strongest = max(abs(e.z) for e in verdict.evidence)
    found: dict[int, PersistedChannel] = {}
    for evidence in verdict.evidence:
        departure = verdict.score * abs(evidence.z) / strongest if strongest > 0 else verdict.score
        signal = pipeline.signal_names.index(evidence.channel)
        if departure >= 1.0 and signal not in found:
            found[signal] = PersistedChannel(signal, float(evidence.z), pipeline.subsystem_of[evidence.channel],
                                             evidence.feature, float(departure))
    return tuple(found.values())


def persisted_signals(pipeline: HostPipeline, watch) -> tuple[PersistedChannel, ...]:
    """The persisted watched columns as signals (a residual as its pruned signal), each signal once, by its
    furthest column."""
    found: dict[int, PersistedChannel] = {}
    columns = np.flatnonzero(watch.persisted)
    for column in columns[np.argsort(-np.abs(watch.departure[columns]), kind="stable")]:
        signal = pipeline.columns.signal_of(int(column))
        if signal not in found:
            found[signal] = PersistedChannel(signal, float(watch.z[column]),
                                             pipeline.subsystem_of[pipeline.signal_names[signal]],
                                             pipeline.columns.feature(int(column)),
                                             float(watch.departure[column]))
    return tuple(found.values())


def baseline_row(catalog: Catalog, pipeline: HostPipeline, verdict: WindowVerdict) -> list:
    """The host's learned baseline, stamped with the window that completed it (deterministic in replays); a
    restored pipeline does not judge again the windows up to that one, which were stored before it."""
    return [catalog.host, catalog.version, verdict.end_ns // 1_000_000, pipeline.windows_seen,
            json.dumps({**pipeline.state(), "through_ns": verdict.end_ns})]


def peer_anomaly(summary: HostWindow, finding: PeerDeviation) -> Anomaly:
    """A host that stays apart from its peers, with the channels that set it apart as evidence."""
    index = {name: i for i, name in enumerate(summary.names)}
    evidence = tuple(Evidence(channel, "peer-mean", float(summary.means[index[channel]]), float("nan"),
                              float("nan"), float(z)) for channel, z in zip(finding.channels, finding.z))
    top = evidence[0]
    signature = match_signature([(e.channel, e.feature, e.z) for e in evidence], finding.as_dict())
    claim = finding.claim or (f"{summary.host}'s {top.channel} is {top.value:.4g}, {abs(top.z):.1f} robust σ from "
                              f"the median of its {finding.peers} peers for {finding.persisted_windows} windows")
    return Anomaly(summary.host, summary.cluster, summary.window_id, summary.window_start_ns, summary.window_end_ns,
                   ("peer",), float(max(abs(z) for z in finding.z)), 4.0, subsystem_for(top.channel), claim, evidence,
                   "deviation from peers", signature.hint if signature else "")


def configuration_anomaly(summary: HostWindow, difference: ConfigurationDifference) -> Anomaly:
    """A host configured unlike its peers (constant channels that differ), found once when its offsets are learned."""
    evidence = tuple(Evidence(channel, "peer-config", value, peer, float("nan"), z) for channel, value, peer, z in
                     zip(difference.channels, difference.values, difference.peer_values,
                         difference.as_dict().values()))
    signature = match_signature([], difference.as_dict())
    top = evidence[0]
    claim = (f"{summary.host} is configured unlike its {difference.peers} peers: {top.channel} is "
             f"{_setting_value(top.value)} where theirs is {_setting_value(top.baseline_mean)}"
             + (f" (and {len(evidence) - 1} more)" if len(evidence) > 1 else ""))
    return Anomaly(summary.host, summary.cluster, summary.window_id, summary.window_start_ns, summary.window_end_ns,
                   ("configuration",), float(len(evidence)), 1.0, subsystem_for(top.channel), claim, evidence,
                   "configuration difference", signature.hint if signature else "")


def _setting_value(value: float) -> str:
    """A setting as it is written: whole numbers in full (1,048,576 bytes, not 1.04858e+06).

    >>> _setting_value(1048576.0), _setting_value(0.5)
    ('1,048,576', '0.5')
    """
    return f"{value:,.0f}" if float(value).is_integer() and abs(value) < 1e15 else f"{value:.6g}"


def configuration_alert(anomaly: Anomaly) -> Alert:
    """One notice, opened and closed at once: a configuration is a fact to fix, not an incident to follow."""
    return Alert(f"{anomaly.host}:config:{anomaly.window_id}", anomaly.host, anomaly.cluster, "closed",
                 anomaly.window_start_ns, anomaly.window_end_ns, anomaly.score, anomaly.subsystem, anomaly.claim,
                 anomaly.hint, "configuration")


def retransmission_anomaly(summary: HostWindow, verdict: RetransVerdict) -> Anomaly:
    evidence = (Evidence(TCP_RETRANSMITS, "sum", summary.retransmits, float("nan"), float("nan"),
                         verdict.rate_z),)
    return Anomaly(summary.host, summary.cluster, summary.window_id, summary.window_start_ns, summary.window_end_ns,
                   ("retransmissions",), verdict.rate_z, 1.0, "network",
                   f"fault-induced retransmissions on {summary.host}: {verdict.reason}", evidence,
                   "fault-induced retransmissions", "check the link and port: errors, optics, switch drops")


def retransmission_row(cluster: str, summary: HostWindow, verdict: RetransVerdict) -> list:
    return [summary.host, cluster, summary.window_id, summary.window_start_ns, summary.window_end_ns,
            verdict.category, verdict.reason, summary.retransmits, summary.segments_out, float(verdict.rate_z)]


def tracked_alert(event, cluster: str) -> Alert:
    """Incidents of the cluster stage are tracked as 'host/concern'; the alert names the host and the concern."""
    host, _, concern = event.host.partition("/")
    alert = alert_record(event, cluster)
    kind = {"peers": "peer", "retransmissions": "retransmissions"}.get(concern, alert.kind)
    kind = "anomaly" if concern.startswith("anomaly:") else kind
    return Alert(alert.alert_id, host, cluster, alert.state, alert.start_ns, alert.end_ns, alert.severity,
                 alert.subsystem, alert.summary.replace(event.host, host), alert.hint,
                 kind if alert.kind != "regime" else "regime")


def finite_or_zero(value: float) -> float:
    """Infinity or NaN (no baseline yet) is stored as 0 so that SQL aggregates stay finite."""
    return float(value) if np.isfinite(value) else 0.0
