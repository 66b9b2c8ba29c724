"""The cluster stage shared by every shell: host-window summaries in; peer deviations, retransmission verdicts and
their alerts out.

Summaries of a cluster are gathered by window, and a window is compared once every host of the cluster has reported
it or a later one. What is compared therefore depends on the summaries, not on the order they arrive in from
different hosts, so a replay of recorded frames equals the live run. A cluster forms over its first
`stale_windows` windows (its hosts learn their baselines at about the same time but report out of step), and nothing
is compared before. A host whose latest window is more than `stale_windows` behind the cluster's newest no longer
holds the others back (it stopped, relearns its baseline, or fell far behind); a summary of a window already
compared is counted as late: it is left out of the peer comparison and the retransmission verdicts, but the host's
own findings are still judged, against the departures its peers reported for that window, so a host read out of
step with its peers (a worker catching up, a restart) raises the same incidents as one read in step.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

import numpy as np

from schemas.channels import TCP_RETRANSMITS, TCP_SPURIOUS_RETRANSMITS
from schemas.records import HostWindow, PersistedChannel
from stream_jobs.engine.crosshost import HostSummary, PeerComparator, PeerDeviation
from stream_jobs.engine.incidents import IncidentTracker
from stream_jobs.engine.peer_effects import PeerEffects
from stream_jobs.engine.retransmissions import FAULT_INDUCED, RetransMonitor, RetransWindow, classify
from stream_jobs.host_incidents import (JOIN_WITHIN_WINDOWS, NOTHING_DEPARTS, SHARED_WITHIN_WINDOWS, began_together,
                                        cause_key, causes_strongest_first, departed_since, departing_channels,
                                        departure_of, departure_onset, named_subsystem, told_lead, own_departures,
                                        recent_lead, windows_to_open)
from stream_jobs.records import (StageOutput, configuration_alert, configuration_anomaly, peer_anomaly,
                                 retransmission_anomaly, retransmission_row, tracked_alert)

STALE_WINDOWS = 30
EVIDENCE_LIMIT = 5
# An incident quiet for this many windows beyond its close is held for its symptom's return (5 minutes in all at 1 s
# windows): a lasting change that flickers in and out of its band is one incident, not a page each time it returns
RECUR_WITHIN_WINDOWS = 270
# A lossy link's effects on its peers (their own loss verdicts, a receiver's changed receive path) show this many
# windows after its loss verdict opens at the latest (a minute)
LOSS_EFFECTS_WITHIN_WINDOWS = 60
# An incident that has lasted this many windows (a minute) is closed by a window led by a channel it never held, which
# opens its own: a lasting change not yet adopted (page cache a write filled) must not absorb the next fault
RENEW_AFTER_WINDOWS = 60
# How many compared windows keep their hosts' departing channels, for summaries that arrive after their window
DEPARTURES_KEPT_WINDOWS = 600


class ClusterStage:
    """Per-cluster peer comparison and retransmission context for every cluster this shell sees."""

    def __init__(self, stale_windows: int = STALE_WINDOWS, comparator_settings: dict | None = None):
        self.stale_windows = stale_windows
        self._comparator_settings = comparator_settings or {}
        self._comparators: dict[str, PeerComparator] = {}
        self._pending: dict[str, dict[int, dict[str, HostWindow]]] = defaultdict(lambda: defaultdict(dict))
        self._latest: dict[str, dict[str, int]] = defaultdict(dict)
        self._compared_through: dict[str, int] = {}
        self._first_window: dict[str, int] = {}
        self._retrans: dict[str, RetransMonitor] = defaultdict(RetransMonitor)
        self._causes: dict[str, set[str]] = defaultdict(set)
        self._began: dict[str, dict[str, int]] = defaultdict(dict)
        self._owner: dict[str, dict[str, str]] = defaultdict(dict)
        self._departing: dict[str, dict[int, dict[str, frozenset[str]]]] = defaultdict(dict)
        self._latest_departing: dict[str, dict[str, frozenset[str]]] = defaultdict(dict)
        self._last_persisted: dict[str, dict[str, int]] = defaultdict(dict)
        # peer findings and loss alarms already ask for persistence; one window of either opens an incident
        self.incidents = IncidentTracker(open_after=1, close_after=30, recur_within=RECUR_WITHIN_WINDOWS,
                                         renew_after=RENEW_AFTER_WINDOWS)
        self.peer_effects = PeerEffects(JOIN_WITHIN_WINDOWS, LOSS_EFFECTS_WITHIN_WINDOWS)
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
        """The newest window every current host of the cluster has reported (or passed); -1 while it forms."""
        latest = self._latest[cluster]
        newest = max(latest.values())
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
            for event in self.incidents.close_all():
                cluster = self._cluster_of_host.get(event.host.split("/")[0], "")
                output.alerts += self.peer_effects.told(cluster, None, [tracked_alert(event, cluster)])
        return output

    def _late_host_window(self, cluster: str, summary: HostWindow) -> StageOutput:
        """A summary of a window already compared: its host's own findings, against the peers of that window."""
        departing = self._departing[cluster].setdefault(summary.window_id, {})
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
            self._note_persisted(summaries[host])
        compared = [HostSummary(h, window_id, summaries[h].names, summaries[h].means, summaries[h].departures is None)
                    for h in hosts]
        findings = {f.host: f for f in map(self._not_told_already, comparator.compare(window_id, compared)) if f}
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
            events = self.incidents.update(f"{host}/peers", window_id, summary.window_start_ns, summary.window_end_ns,
                                           finding is not None, anomaly.score / anomaly.threshold if anomaly else 0.0,
                                           anomaly.subsystem if anomaly else "",
                                           [(e.channel, e.feature, e.z) for e in anomaly.evidence] if anomaly else [])
            output.alerts += [tracked_alert(e, cluster) for e in events]
        output.extend(self._retransmissions(cluster, [summaries[h] for h in hosts]))
        output.alerts = self.peer_effects.told(cluster, window_id, output.alerts, self._last_shown(output))
        return output

    def _last_shown(self, output: StageOutput) -> dict[str, int]:
        """Each open incident's last anomalous window, looked up only when the window opens one: a peer's incident
        that no longer shows leads no other."""
        if not any(alert.state == "open" for alert in output.alerts):
            return {}
        return {incident.incident_id: incident.last_window_id for incident in self.incidents.open_incidents()}

    def _note_persisted(self, summary: HostWindow) -> None:
        last = self._last_persisted[summary.host]
        for persisted in summary.persisted:
            last[summary.names[persisted.index]] = summary.window_id

    def _not_told_already(self, finding: PeerDeviation) -> PeerDeviation | None:
        """The peer finding without the channels the host's own watch found persisting while the deviation built
        up: that change was told as the host's own finding (a page cache a fault filled stays apart from the peers'
        long after), and is not told again."""
        last = self._last_persisted[finding.host]
        since = finding.window_id - finding.persisted_windows
        kept = [(channel, z) for channel, z in zip(finding.channels, finding.z) if last.get(channel, since) <= since]
        if not kept:
            return None
        channels, z = zip(*kept)
        return replace(finding, channels=channels, z=z)

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
        for old in [w for w in kept if w <= window_id - DEPARTURES_KEPT_WINDOWS]:
            del kept[old]

    def _peers_departing(self, cluster: str, window_id: int, summary: HostWindow) -> list[frozenset[str]]:
        """For each peer of the host in the window, those of the host's persisted channels whose departure on the
        peer began within SHARED_WITHIN_WINDOWS of its departure on the host (hosts sample at their own instants and
        learn their own bands, so a change they share does not cross every band in the same window). A peer still out
        on a channel since long before is not sharing the host's change: a page cache a fault filled on one host
        stays out for minutes, and would hide the same channel's own change on another."""
        kept = self._departing[cluster]
        peers = [peer for peer in kept.get(window_id, {}) if peer != summary.host]
        channels = {summary.names[p.index] for p in summary.persisted}
        if not channels:
            return [NOTHING_DEPARTS] * len(peers)
        onsets = {c: departure_onset(kept, summary.host, c, window_id) or window_id for c in channels}
        candidates = departed_since(kept, channels, min(onsets.values()) - SHARED_WITHIN_WINDOWS)
        return [frozenset(c for c in channels if began_together(departure_onset(kept, peer, c, window_id),
                                                                  onsets[c]))
                if peer in candidates else NOTHING_DEPARTS for peer in peers]

    def _host_incidents(self, cluster: str, window_id: int, summaries: list[HostWindow]) -> StageOutput:
        """Each host's own findings (its persisted channels, less those its peers left their bands on too) as
        incidents of the host detectors, one per cause (subsystem): a new cause opens its own incident while
        another is open, and causes that open together are told strongest first."""
        output = StageOutput()
        for summary in summaries:
            own = own_departures(summary, self._peers_departing(cluster, window_id, summary))
            self._causes[summary.host] |= {p.subsystem for p in summary.persisted}
            causes = causes_strongest_first(summary, own, self._causes[summary.host])
            routed = self._routed(summary.host, summary.window_id, summary.names, causes)
            for subsystem, _ in causes:
                mine = sorted(routed.get(subsystem, []), key=lambda p: (-departure_of(summary, p), p.index))
                evidence = [(summary.names[p.index], p.feature, p.z) for p in mine[:EVIDENCE_LIMIT]]
                severity = max((departure_of(summary, p) for p in mine), default=0.0)
                named = named_subsystem(summary, mine) if mine else subsystem
                lead = told_lead(summary, mine, named)
                events = self.incidents.update(cause_key(summary.host, subsystem), summary.window_id,
                                               summary.window_start_ns, summary.window_end_ns, bool(mine), severity,
                                               named, evidence,
                                               windows_to_open(severity, mine[0].feature if mine else "mean"), lead)
                output.alerts += [tracked_alert(e, cluster) for e in events]
        return output

    def _routed(self, host: str, window_id: int, names: tuple[str, ...],
                causes: list[tuple[str, list[PersistedChannel]]]) -> dict[str, list[PersistedChannel]]:
        """Which incident each departing channel goes to in this window. A channel that joined an incident keeps
        going to it while it lasts; otherwise a channel goes to its cause's incident (open, or waiting for its second
        window); a channel of a cause with none joins an incident of the host that began within
        JOIN_WITHIN_WINDOWS windows (the effects of one fault reach other subsystems within seconds: writes fill a
        disk queue, dirty pages and I/O wait), and with none begins its cause's own incident. A channel that departs
        later, in a subsystem with no incident of its own, is a new cause. A quiet incident (one held open in case its
        symptom returns) takes back only the channels it held: others of its subsystem are a new fault's."""
        live = {cause for cause in self._causes[host] if self.incidents.open_since_ns(cause_key(host, cause))
                is not None}
        quiet = {cause: self.incidents.held_quietly(cause_key(host, cause), window_id) for cause in live}
        began = {cause: window for cause, window in self._began[host].items() if cause in live}
        owner = {name: lead for name, lead in self._owner[host].items() if lead in live}
        routed: dict[str, list[PersistedChannel]] = defaultdict(list)
        for cause, mine in causes:
            for persisted in mine:
                name = names[persisted.index]
                resumes = cause in live and (quiet.get(cause) is None or name in quiet[cause])
                target = owner.get(name) or (cause if resumes else recent_lead(began, window_id))
                if target is None:
                    target, began[cause] = cause, window_id
                    live.add(cause)
                elif target != cause:
                    owner[name] = target
                routed[target].append(persisted)
        self._began[host], self._owner[host] = began, owner
        return routed

    def _retransmissions(self, cluster: str, summaries: list[HostWindow]) -> StageOutput:
        """Each host's window through its loss monitor, then a verdict that contrasts its alarm with its peers'."""
        windows = [retrans_window(summary) for summary in summaries]
        states = [self._retrans[w.host].observe(w) for w in windows]
        alarmed = sum(state[0] for state in states)
        output = StageOutput()
        for summary, window, (alarm, loss_z) in zip(summaries, windows, states):
            verdict = classify(window, alarm, loss_z, alarmed - alarm, len(summaries) - 1, self._retrans[window.host])
            output.retransmission_rows.append(retransmission_row(cluster, summary, verdict))
            faulty = verdict.category == FAULT_INDUCED
            anomaly = retransmission_anomaly(summary, verdict) if faulty else None
            output.anomalies += [anomaly] if anomaly else []
            events = self.incidents.update(
                f"{summary.host}/retransmissions", summary.window_id, summary.window_start_ns, summary.window_end_ns,
                faulty, max(verdict.rate_z, 1.0) if faulty else 0.0, "network",
                [(TCP_RETRANSMITS, "sum", verdict.rate_z)] if faulty else [])
            output.alerts += [tracked_alert(e, cluster) for e in events]
        return output


def retrans_window(summary: HostWindow) -> RetransWindow:
    """The window's retransmitted and sent segments, and the spurious ones when the host counts DSACKs."""
    seconds = max(summary.window_end_ns - summary.window_start_ns, 0) / 1e9
    spurious = 0.0
    if TCP_SPURIOUS_RETRANSMITS in summary.names:
        rate = float(summary.means[summary.names.index(TCP_SPURIOUS_RETRANSMITS)])
        spurious = rate * seconds if np.isfinite(rate) else 0.0
    return RetransWindow(summary.host, summary.window_id, summary.retransmits, summary.segments_out, spurious)
