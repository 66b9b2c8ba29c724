"""The cluster stage shared by every shell: host-window summaries in; peer deviations, retransmission verdicts and
their alerts out.

Summaries of a cluster are gathered by window, and a window is compared once every host of the cluster has reported
it or a later one. What is compared therefore depends on the summaries, not on the order they arrive in from
different hosts, so a replay of recorded frames equals the live run. A cluster forms over its first
`stale_after_s` (its hosts learn their baselines at about the same time but report out of step), and nothing
is compared before. A host whose latest window is more than `stale_after_s` behind the cluster's newest no longer
holds the others back (it stopped, relearns its baseline, or fell far behind); a summary of a window already
compared is counted as late: it is left out of the peer comparison and the retransmission verdicts, but the host's
own findings are still judged, against the departures its peers reported for that window, so a host read out of
step with its peers (a worker catching up, a restart) raises the same incidents as one read in step. What the
findings become is decided in stream_jobs.engine.decide; this stage gathers, orders and records.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from schemas.channels import TCP_RETRANSMITS, TCP_SPURIOUS_RETRANSMITS
from schemas.records import HostWindow
from stream_jobs.engine.crosshost import HostSummary, PeerComparator, PeerDeviation, common_matrix
from stream_jobs.engine.decide.decision import Decision
from stream_jobs.engine.decide.findings import Departures, departing_channels
from stream_jobs.engine.decide.peer_effects import PeerEffects
from stream_jobs.engine.peer_trouble import PeerTrouble
from stream_jobs.engine.retransmissions import FAULT_INDUCED, RetransMonitor, RetransRules, RetransWindow, classify
from stream_jobs.engine.settings import EngineSettings
from stream_jobs.records import (StageOutput, configuration_alert, configuration_anomaly, peer_anomaly,
                                 retransmission_anomaly, retransmission_row, tracked_alert)


class ClusterStage:
    """Per-cluster peer comparison and retransmission context for every cluster this shell sees."""

    def __init__(self, settings: EngineSettings = EngineSettings(), one_host: bool = False):
        self.decision = Decision(settings.decision, settings.stride_s)
        timing = self.decision.timing
        self.stale_windows = timing.stale_after
        self.one_host = one_host
        self._departures_kept = timing.departures_kept
        self._comparator_settings = {"persist_windows": timing.peer_hold, "learn_windows": timing.peer_learn}
        self._comparators: dict[str, PeerComparator] = {}
        decision = settings.decision
        self._new_trouble = lambda: PeerTrouble(settings.window_s, settings.stride_s, decision.peer_trouble_span_s,
                                                decision.peer_trouble_risk)
        self._troubles: dict[str, PeerTrouble] = {}
        self._pending: dict[str, dict[int, dict[str, HostWindow]]] = defaultdict(lambda: defaultdict(dict))
        self._latest: dict[str, dict[str, int]] = defaultdict(dict)
        self._compared_through: dict[str, int] = {}
        self._first_window: dict[str, int] = {}
        # each second of loss lies in window_s / stride_s overlapping windows; the history is kept for loss_history_s
        rules = RetransRules(overlap=max(1.0, settings.window_s / settings.stride_s),
                             history_windows=timing.loss_history)
        self._retrans: dict[str, RetransMonitor] = defaultdict(lambda: RetransMonitor(rules))
        self._departing: dict[str, Departures] = defaultdict(dict)
        self._latest_departing: dict[str, dict[str, frozenset[str]]] = defaultdict(dict)
        self.incidents = self.decision.incidents
        self.peer_effects = PeerEffects(timing.join_within, timing.loss_effects_within)
        self._cluster_of_host: dict[str, str] = {}
        self.windows_compared = 0
        self.late_summaries = 0

    def on_host_window(self, summary: HostWindow) -> StageOutput:
        """Take one summary; returns what the windows it completes show."""
        cluster = summary.cluster
        if summary.window_id <= self._compared_through.get(cluster, -1):
            self.late_summaries += 1
            return self._late_host_window(cluster, summary)
        self._pending[cluster][summary.window_id][summary.host] = summary
        self._cluster_of_host[summary.host] = cluster
        latest = self._latest[cluster]
        latest[summary.host] = max(latest.get(summary.host, summary.window_id), summary.window_id)
        self._first_window.setdefault(cluster, summary.window_id)
        through = self._reported_through(cluster)
        return self._compare_windows(cluster, sorted(w for w in self._pending[cluster] if w <= through))

    def _reported_through(self, cluster: str) -> int:
        """The newest window every current host of the cluster has reported (or passed); -1 while it forms, which a
        shell that watches one host (the embedded run) has no need to wait for: a restored baseline judges at once."""
        latest = self._latest[cluster]
        newest = max(latest.values())
        if self.one_host:
            return newest
        if newest < self._first_window[cluster] + self.stale_windows:
            return -1
        return min(window for window in latest.values() if window >= newest - self.stale_windows)

    def flush(self, close_incidents: bool = True) -> StageOutput:
        """Compare every window still waiting and, at the end of a run, close open incidents (a worker handing its
        clusters to another leaves them open for it to carry on)."""
        output = StageOutput()
        for cluster in list(self._pending):
            output.extend(self._compare_windows(cluster, sorted(self._pending[cluster])))
        if close_incidents:
            for event in self.decision.close_all():
                cluster = self._cluster_of_host.get(event.host.split("/")[0], "")
                output.alerts += self.peer_effects.told(cluster, None, [tracked_alert(event, cluster)])
        return output

    def _late_host_window(self, cluster: str, summary: HostWindow) -> StageOutput:
        """A summary of a window already compared: its host's own findings, against the peers of that window."""
        kept = self._departing[cluster]
        if summary.window_id not in kept:  # kept in window order, oldest first (see _keep_departing)
            kept[summary.window_id] = {}
            self._departing[cluster] = kept = dict(sorted(kept.items()))
        departing = kept[summary.window_id]
        if summary.host in departing:
            return StageOutput()  # the same window again (a restarted worker publishes it twice)
        departing[summary.host] = self._departing_of(cluster, summary)
        output = self._host_incidents(cluster, summary.window_id, [summary])
        output.alerts = self.peer_effects.told(cluster, summary.window_id, output.alerts, self._last_shown(output))
        return output

    def _compare_windows(self, cluster: str, window_ids: list[int]) -> StageOutput:
        output = StageOutput()
        for window_id in window_ids:
            summaries = self._pending[cluster].pop(window_id)
            self._compared_through[cluster] = max(self._compared_through.get(cluster, window_id), window_id)
            output.extend(self._compare(cluster, window_id, summaries))
        return output

    def _compare(self, cluster: str, window_id: int, summaries: dict[str, HostWindow]) -> StageOutput:
        self.windows_compared += 1
        comparator = self._comparators.setdefault(cluster, PeerComparator(**self._comparator_settings))
        hosts = sorted(summaries)
        for host in hosts:
            self.decision.note_persisted(summaries[host])
        compared = [HostSummary(h, window_id, summaries[h].names, summaries[h].means, summaries[h].departures is None,
                                summaries[h].kinds) for h in hosts]
        deviations = comparator.compare(window_id, compared) + self._trouble(cluster, window_id, compared, summaries)
        findings = {f.host: f for f in map(self.decision.untold_peer_finding, deviations) if f}
        self._keep_departing(cluster, window_id, {host: self._departing_of(cluster, summaries[host]) for host in hosts})
        output = self._host_incidents(cluster, window_id, [summaries[h] for h in hosts])
        for difference in comparator.take_configuration():
            anomaly = configuration_anomaly(summaries[difference.host], difference)
            output.anomalies.append(anomaly)
            output.alerts.append(configuration_alert(anomaly))
        for host in hosts:
            summary = summaries[host]
            finding = findings.get(host)
            anomaly = peer_anomaly(summary, finding) if finding else None
            output.anomalies += [anomaly] if anomaly else []
            events = self.decision.concern_window(host, "peers", summary, finding is not None,
                                                  anomaly.score / anomaly.threshold if anomaly else 0.0,
                                                  anomaly.subsystem if anomaly else "",
                                                  [(e.channel, e.feature, e.z) for e in anomaly.evidence]
                                                  if anomaly else [])
            output.alerts += [tracked_alert(e, cluster) for e in events]
        output.extend(self._retransmissions(cluster, [summaries[h] for h in hosts]))
        output.alerts = self.peer_effects.told(cluster, window_id, output.alerts, self._last_shown(output))
        return output

    def _trouble(self, cluster: str, window_id: int, compared: list[HostSummary],
                 summaries: dict[str, HostWindow]) -> list[PeerDeviation]:
        """Hosts with more trouble than all their peers (see peer_trouble), as peer findings; none from hosts whose
        summaries do not say their channels' kinds."""
        first = summaries[compared[0].host] if compared else None
        trouble = self._troubles.setdefault(cluster, self._new_trouble())
        if first is None or not first.kinds or not trouble.counts(window_id):
            return []
        names, matrix = common_matrix(compared)
        kind_of = dict(zip(first.names, first.kinds))
        return [finding.as_deviation() for finding in trouble.compare(
            window_id, tuple(s.host for s in compared), names, tuple(kind_of.get(n, "") for n in names), matrix)]

    def _last_shown(self, output: StageOutput) -> dict[str, int]:
        """Each open incident's last anomalous window, looked up only when the window opens one: a peer's incident
        that no longer shows leads no other."""
        if not any(alert.state == "open" for alert in output.alerts):
            return {}
        return {incident.incident_id: incident.last_window_id for incident in self.incidents.open_incidents()}

    def _departing_of(self, cluster: str, summary: HostWindow) -> frozenset[str]:
        """The host's departing channels in the window; the very set of its previous window when they are the same,
        so that a departure lasting minutes is held once, not once per kept window."""
        departing, latest = departing_channels(summary), self._latest_departing[cluster]
        if latest.get(summary.host) == departing:
            return latest[summary.host]
        latest[summary.host] = departing
        return departing

    def _keep_departing(self, cluster: str, window_id: int, departing: dict[str, frozenset[str]]) -> None:
        kept = self._departing[cluster]
        kept[window_id] = departing
        oldest_kept = window_id - self._departures_kept
        while kept and next(iter(kept)) <= oldest_kept:  # kept in window order, oldest first
            del kept[next(iter(kept))]

    def _host_incidents(self, cluster: str, window_id: int, summaries: list[HostWindow]) -> StageOutput:
        """Each host's own findings in the window as incidents (see Decision.host_window)."""
        kept = self._departing[cluster]
        return StageOutput(alerts=[tracked_alert(event, cluster) for summary in summaries
                                   for event in self.decision.host_window(summary, kept)])

    def _retransmissions(self, cluster: str, summaries: list[HostWindow]) -> StageOutput:
        """Each host's window through its loss monitor, then a verdict that contrasts its alarm with its peers'."""
        windows = [retrans_window(summary) for summary in summaries]
        rates = [self._retrans[w.host].loss_rate for w in windows]
        states = [self._retrans[w.host].observe(w, _peer_median(rates, row)) for row, w in enumerate(windows)]
        alarmed = sum(state[0] for state in states)
        output = StageOutput()
        for summary, window, (alarm, loss_z) in zip(summaries, windows, states):
            verdict = classify(window, alarm, loss_z, alarmed - alarm, len(summaries) - 1, self._retrans[window.host])
            output.retransmission_rows.append(retransmission_row(cluster, summary, verdict))
            faulty = verdict.category == FAULT_INDUCED
            anomaly = retransmission_anomaly(summary, verdict) if faulty else None
            output.anomalies += [anomaly] if anomaly else []
            events = self.decision.concern_window(summary.host, "retransmissions", summary, faulty,
                                                  max(verdict.rate_z, 1.0) if faulty else 0.0, "network",
                                                  [(TCP_RETRANSMITS, "sum", verdict.rate_z)] if faulty else [])
            output.alerts += [tracked_alert(e, cluster) for e in events]
        return output


def _peer_median(rates: list[float], row: int) -> float:
    """The median of the other hosts' loss rates; none (infinite) with fewer than two peers to go by."""
    peers = rates[:row] + rates[row + 1:]
    return float(np.median(peers)) if len(peers) >= 2 else math.inf


def retrans_window(summary: HostWindow) -> RetransWindow:
    """The window's retransmitted and sent segments, and the spurious ones when the host counts DSACKs."""
    seconds = max(summary.window_end_ns - summary.window_start_ns, 0) / 1e9
    spurious = 0.0
    if TCP_SPURIOUS_RETRANSMITS in summary.names:
        rate = float(summary.means[summary.names.index(TCP_SPURIOUS_RETRANSMITS)])
        spurious = rate * seconds if np.isfinite(rate) else 0.0
    return RetransWindow(summary.host, summary.window_id, summary.retransmits, summary.segments_out, spurious)
