"""The composition of a host's window into incidents, top to bottom: its own persisted departures (less those its
peers share), grouped into causes, routed to their incidents, named, held, then opened, updated, closed or reopened;
peer findings and loss verdicts become incidents of their own concern. One tracker keeps them all."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from schemas.records import HostWindow
from stream_jobs.engine.crosshost import PeerDeviation
from stream_jobs.engine.decide.findings import (Departures, causes_strongest_first, departure_of, hold_s,
                                                own_departures, shared_with_peers, window_lead)
from stream_jobs.engine.decide.incidents import EVIDENCE_LIMIT, AlertEvent, IncidentTracker
from stream_jobs.engine.decide.routing import CauseRouter, cause_key
from stream_jobs.engine.decide.settings import DecisionSettings, DecisionTiming


class Decision:
    """Every host's findings of one cluster shell, as alert events."""

    def __init__(self, settings: DecisionSettings = DecisionSettings(), stride_s: float = 1.0):
        self.settings = settings
        self.timing = DecisionTiming.of(settings, stride_s)
        self.incidents = IncidentTracker(settings)
        self.router = CauseRouter(self.incidents, self.timing.join_within)
        self._causes: dict[str, set[str]] = defaultdict(set)
        self._last_persisted: dict[str, dict[str, int]] = defaultdict(dict)

    def host_window(self, summary: HostWindow, kept: Departures) -> list[AlertEvent]:
        """The host's own findings in its window as incidents, one per cause (subsystem): a new cause opens its own
        incident while another is open, and causes that open together are told strongest first. `kept`: every
        host's departing channels by window, to tell the host's own departures from those its peers share."""
        own = own_departures(summary, shared_with_peers(kept, summary, self.timing.shared_within),
                             self.settings.shared_by_hosts)
        self._causes[summary.host] |= {p.subsystem for p in summary.persisted}
        causes = causes_strongest_first(summary, own, self._causes[summary.host])
        routed = self.router.routed(summary.host, summary.window_id, summary.names, causes)
        events = []
        for cause, _ in causes:
            mine = sorted(routed.get(cause, []), key=lambda p: (-departure_of(summary, p), p.index))
            evidence = [(summary.names[p.index], p.feature, p.z) for p in mine[:EVIDENCE_LIMIT]]
            severity = max((departure_of(summary, p) for p in mine), default=0.0)
            lead = window_lead(summary, mine) if mine else None
            told = (summary.names[lead.index], lead.feature, lead.z) if lead else None
            events += self.incidents.update(cause_key(summary.host, cause), summary.window_id,
                                            summary.window_start_ns, summary.window_end_ns, bool(mine), severity,
                                            lead.subsystem if lead else cause, evidence,
                                            hold_s(severity, mine[0].feature if mine else "mean", self.settings), told)
        return events

    def concern_window(self, host: str, concern: str, summary: HostWindow, flagged: bool, severity: float,
                       subsystem: str, evidence) -> list[AlertEvent]:
        """A finding of another concern about the host (its peers, its retransmissions), which already asks for
        persistence: one flagged window opens its incident."""
        return self.incidents.update(f"{host}/{concern}", summary.window_id, summary.window_start_ns,
                                     summary.window_end_ns, flagged, severity, subsystem, evidence)

    def note_persisted(self, summary: HostWindow) -> None:
        """Remember the window in which each of the host's channels last persisted (see untold_peer_finding)."""
        last = self._last_persisted[summary.host]
        for persisted in summary.persisted:
            last[summary.names[persisted.index]] = summary.window_id

    def untold_peer_finding(self, finding: PeerDeviation) -> PeerDeviation | None:
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

    def close_all(self) -> list[AlertEvent]:
        return self.incidents.close_all()
