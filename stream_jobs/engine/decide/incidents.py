"""Incidents: what an operator is paged for, one per cause, opened, updated, closed and reopened as alert events.

Time is the windows' own (their end instants), so the rules read the same at any stride. A cause's flagged windows
open an incident once they have been flagged for the `hold_s` a finding asks (0: at once); the incident is told again
when its severity escalates by `escalation` or its name changes, and closes `close_after_s` after its last anomalous
window, with its closing sent. The same symptom back within `reopen_within_s` of that window (its lead channel one
the incident held, and no level of a channel it never held) reopens the same incident, told as "back after a quiet
spell"; anything else opens a new one. An incident that has lasted `renew_after_s` is closed by a window led by a
channel it never held, which opens its own: a new fault is not absorbed by an old change not yet adopted.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np

from stream_jobs.engine.decide.naming import CPU_TIME, STATE, lead
from stream_jobs.engine.decide.settings import DecisionSettings
from stream_jobs.engine.severity import severity_scale, severity_word
from stream_jobs.engine.signatures import match_signature

NS_PER_S = 1_000_000_000
EVIDENCE_LIMIT = 5
SUMMARY_EVIDENCE = 3
LEVEL_FEATURES = frozenset({"mean", "residual"})
BACK_AFTER_QUIET = "back after a quiet spell"


@dataclass(frozen=True)
class AlertEvent:
    """One state of an alert, as published: 'open', 'update' or 'closed' (regime notices are born closed)."""

    alert_id: str
    host: str
    state: str
    start_ns: int
    end_ns: int
    severity: float
    subsystem: str
    summary: str
    hint: str = ""
    kind: str = "anomaly"


@dataclass(frozen=True)
class Incident:
    """A snapshot of an open incident."""

    incident_id: str
    host: str
    first_window_id: int
    last_window_id: int
    start_ns: int
    end_ns: int
    windows: int
    peak_severity: float
    subsystem: str
    evidence: tuple[tuple[str, str, float], ...]


@dataclass(frozen=True)
class FlaggedWindow:
    """One anomalous window of a cause: its severity, the subsystem it is named after and its evidence, strongest
    first; `lead`, the (channel, feature, z) of that subsystem its name comes from."""

    window_id: int
    start_ns: int
    end_ns: int
    severity: float
    subsystem: str
    evidence: tuple[tuple[str, str, float], ...]
    lead: tuple[str, str, float] | None = None


@dataclass
class _OpenIncident:
    """The running tally of one incident."""

    host: str
    first_window_id: int
    start_ns: int
    last_window_id: int = 0
    end_ns: int = 0
    windows: int = 0
    peak: float = 0.0
    severity_by_subsystem: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    evidence_counts: Counter = field(default_factory=Counter)
    strongest_z: dict[tuple[str, str], float] = field(default_factory=dict)
    leads: dict[str, dict[tuple[str, str], tuple[int, float]]] = field(default_factory=lambda: defaultdict(dict))
    reported_severity: float = 0.0
    reported_subsystem: str = ""
    last_event: AlertEvent | None = None

    @property
    def incident_id(self) -> str:
        return f"{self.host}:{self.first_window_id}"

    def add(self, window: FlaggedWindow) -> None:
        self.last_window_id, self.end_ns = window.window_id, window.end_ns
        self.windows += 1
        self.peak = max(self.peak, window.severity)
        self.severity_by_subsystem[window.subsystem] += window.severity
        for channel, feature, z in window.evidence:
            self.evidence_counts[(channel, feature)] += 1
            if (channel, feature) not in self.strongest_z or abs(z) > abs(self.strongest_z[(channel, feature)]):
                self.strongest_z[(channel, feature)] = z
        if window.lead is not None:
            channel, feature, z = window.lead
            count, strongest = self.leads[window.subsystem].get((channel, feature), (0, 0.0))
            self.leads[window.subsystem][(channel, feature)] = (count + 1, z if abs(z) > abs(strongest) else strongest)

    @property
    def subsystem(self) -> str:
        """The naming rule (see naming.lead) over the subsystems its windows were named after, each as strong as
        their summed severity (alphabetical among ties, for determinism)."""
        named = sorted(self.severity_by_subsystem.items())
        return lead(named, lambda item: CPU_TIME if item[0] == "cpu" else STATE, lambda item: item[1])[0]

    def top_evidence(self) -> tuple[tuple[str, str, float], ...]:
        """The most frequent metric–feature pairs, strongest first among equals, with their strongest z."""
        pairs = sorted(self.evidence_counts, key=lambda p: (-self.evidence_counts[p], -abs(self.strongest_z[p]), p))
        return tuple((c, f, self.strongest_z[(c, f)]) for c, f in pairs[:EVIDENCE_LIMIT])

    def told_evidence(self) -> tuple[tuple[str, str, float], ...]:
        """The evidence an alert's words give: first the channels that led the windows named after the incident's
        subsystem (most often first), then the most frequent pairs, so that a storage incident tells of its disk
        before the CPU time that moved with it."""
        named = self.leads.get(self.subsystem, {})
        led = sorted(named, key=lambda p: (-named[p][0], -abs(named[p][1]), p))
        told = [(c, f, named[(c, f)][1]) for c, f in led]
        return tuple(told + [e for e in self.top_evidence() if e[:2] not in named])[:EVIDENCE_LIMIT]

    def held_channels(self) -> frozenset[str]:
        return frozenset(channel for channel, _ in self.evidence_counts)

    def snapshot(self) -> Incident:
        return Incident(self.incident_id, self.host, self.first_window_id, self.last_window_id, self.start_ns,
                        self.end_ns, self.windows, self.peak, self.subsystem, self.top_evidence())


@dataclass
class _CauseState:
    incident: _OpenIncident | None = None
    closed: _OpenIncident | None = None
    pending: list[FlaggedWindow] = field(default_factory=list)
    last_window_id: int | None = None
    last_end_ns: int | None = None


class IncidentTracker:
    """Turns the per-window findings of many causes (a host, or 'host/concern') into deduplicated alert events."""

    def __init__(self, settings: DecisionSettings = DecisionSettings()):
        self.settings = settings
        self._close_after_ns = round(settings.close_after_s * NS_PER_S)
        self._reopen_within_ns = round(settings.reopen_within_s * NS_PER_S)
        self._renew_after_ns = round(settings.renew_after_s * NS_PER_S)
        self._causes: dict[str, _CauseState] = defaultdict(_CauseState)

    def update(self, cause: str, window_id: int, start_ns: int, end_ns: int, flagged: bool, severity: float,
               subsystem: str, evidence=(), hold_s: float = 0.0, lead=None) -> list[AlertEvent]:
        """Feed one window's finding of a cause; returns the alert events it causes. Late or repeated windows are
        ignored. `hold_s`: how long this finding must have been flagged, window after window, to open an incident;
        `lead`: the (channel, feature, z) the name `subsystem` comes from, told first (evidence comes strongest
        first, of any subsystem)."""
        state = self._causes[cause]
        if state.last_window_id is not None and window_id <= state.last_window_id:
            return []
        events = self._expire(state, _quiet_through_ns(state, window_id, end_ns) if flagged else end_ns)
        state.last_window_id, state.last_end_ns = window_id, end_ns
        if not flagged:
            state.pending = []
            return events
        window = FlaggedWindow(window_id, start_ns, end_ns, _finite(severity), subsystem, _triples(evidence),
                               _triples([lead])[0] if lead is not None else None)
        if state.incident and self._renewed_by(state.incident, window):
            events += self._close(state, "a new symptom opens its own incident")
            state.closed = None
        if state.incident:
            return events + self._extend(state.incident, window)
        if state.closed and _only_its_symptoms(state.closed, window):
            state.incident, state.closed = state.closed, None
            return events + self._extend(state.incident, window, BACK_AFTER_QUIET)
        return events + self._maybe_open(cause, state, window, hold_s)

    def close_all(self) -> list[AlertEvent]:
        """Close every open incident (end of a run), cause by cause in name order."""
        events = []
        for cause in sorted(self._causes):
            state = self._causes[cause]
            state.pending, state.closed = [], None
            if state.incident:
                events += self._close(state, "run ended")
        return events

    def open_count(self) -> int:
        """Incidents open now, over all causes."""
        return sum(state.incident is not None for state in self._causes.values())

    def open_since_ns(self, cause: str) -> int | None:
        """The start of the cause's open, reopenable or pending incident: a restart must see its windows again."""
        state = self._causes.get(cause)
        if state is None:
            return None
        incident = state.incident or state.closed
        if incident is not None:
            return incident.start_ns
        return state.pending[0].start_ns if state.pending else None

    def reopenable(self, cause: str) -> frozenset[str] | None:
        """The channels of the cause's closed incident while the same symptom may still reopen it; None otherwise."""
        state = self._causes.get(cause)
        return state.closed.held_channels() if state is not None and state.closed is not None else None

    def forget(self, cause: str) -> None:
        """Drop the cause's incident state, e.g. when another worker takes its host over."""
        self._causes.pop(cause, None)

    def open_incidents(self) -> list[Incident]:
        return [s.incident.snapshot() for _, s in sorted(self._causes.items()) if s.incident]

    def _renewed_by(self, incident: _OpenIncident, window: FlaggedWindow) -> bool:
        """Whether the window, led by a channel the incident never held, closes an incident that has lasted
        `renew_after_s` (0: never)."""
        return (self._renew_after_ns > 0 and window.end_ns - incident.start_ns >= self._renew_after_ns
                and not _same_symptom(incident, window))

    def _expire(self, state: _CauseState, quiet_through_ns: int) -> list[AlertEvent]:
        """Close the incident once it has been quiet `close_after_s` after its last anomalous window (through the
        window before a flagged one); forget a closed one once its symptom can no longer reopen it."""
        events, incident = [], state.incident
        if incident is not None and quiet_through_ns - incident.end_ns >= self._close_after_ns:
            events, state.closed = self._close(state, ""), incident
        if state.closed is not None and quiet_through_ns - state.closed.end_ns >= self._reopen_within_ns:
            state.closed = None
        return events

    def _maybe_open(self, cause: str, state: _CauseState, window: FlaggedWindow, hold_s: float) -> list[AlertEvent]:
        if state.pending and state.pending[-1].window_id != window.window_id - 1:
            state.pending = []
        state.pending.append(window)
        if window.end_ns - state.pending[0].end_ns < round(hold_s * NS_PER_S):
            return []
        state.closed = None
        incident = _OpenIncident(cause, state.pending[0].window_id, state.pending[0].start_ns)
        for pending in state.pending:
            incident.add(pending)
        state.incident, state.pending = incident, []
        return self._emit(incident, "open", "")

    def _extend(self, incident: _OpenIncident, window: FlaggedWindow, resumed: str = "") -> list[AlertEvent]:
        incident.add(window)
        escalated = incident.peak > incident.reported_severity and (
            incident.reported_severity <= 0 or incident.peak >= self.settings.escalation * incident.reported_severity)
        if resumed or escalated or incident.subsystem != incident.reported_subsystem:
            return self._emit(incident, "update", resumed)
        return []

    def _close(self, state: _CauseState, reason: str) -> list[AlertEvent]:
        incident, state.incident = state.incident, None
        return self._emit(incident, "closed", reason)

    def _emit(self, incident: _OpenIncident, state: str, reason: str) -> list[AlertEvent]:
        """The event for the incident's current state, unless it repeats the previous one."""
        top = incident.top_evidence()
        signature = match_signature(top)
        event = AlertEvent(incident.incident_id, incident.host, state, incident.start_ns, incident.end_ns,
                           severity_scale(incident.peak), incident.subsystem,
                           _summary(incident, incident.told_evidence(), signature, reason),
                           signature.hint if signature else "")
        if event == incident.last_event:
            return []
        incident.last_event = event
        incident.reported_severity, incident.reported_subsystem = incident.peak, incident.subsystem
        return [event]


def _quiet_through_ns(state: _CauseState, window_id: int, end_ns: int) -> int:
    """The end of the window before a flagged one (missing windows count as quiet): one stride before its end."""
    if state.last_window_id is None or state.last_end_ns is None:
        return end_ns
    stride_ns = (end_ns - state.last_end_ns) // max(window_id - state.last_window_id, 1)
    return end_ns - stride_ns


def _same_symptom(incident: _OpenIncident, window: FlaggedWindow) -> bool:
    """Whether the window's leading channel (evidence comes strongest first) is one the incident already holds; a
    window without evidence cannot tell, and is taken as the same."""
    if not window.evidence:
        return True
    return window.evidence[0][0] in incident.held_channels()


def _only_its_symptoms(incident: _OpenIncident, window: FlaggedWindow) -> bool:
    """Whether the window's leading channel is one the incident holds and no other channel it never held has left
    its level (mean, or residual from a correlated channel): a lasting change that flickers back shows the channels
    it showed, perhaps with a spread or two that a burst drags along; a new fault that moves one of them (page
    allocations) brings a level of its own too (the page faults of a new allocation)."""
    held = incident.held_channels()
    return _same_symptom(incident, window) and all(channel in held or feature not in LEVEL_FEATURES
                                                   for channel, feature, _ in window.evidence)


def _summary(incident: _OpenIncident, top, signature, reason: str) -> str:
    """One line, e.g. 'major cpu anomaly on h1 over 4 windows, peak severity 4.1 of 10; cpu.busy.cpu3 std z=+12.0'."""
    plural = "s" if incident.windows != 1 else ""
    severity = severity_scale(incident.peak)
    words = f"{severity_word(severity)} {incident.subsystem} anomaly on {incident.host} over {incident.windows} " \
            f"window{plural}, peak severity {severity:.1f} of 10"
    if top:
        words += "; " + ", ".join(f"{c} {f} z={z:+.1f}" for c, f, z in top[:SUMMARY_EVIDENCE])
    if signature:
        words += f"; looks like {signature.name}"
    return words + (f"; {reason}" if reason else "")


def _finite(value: float) -> float:
    return float(np.nan_to_num(float(value), nan=0.0, posinf=np.finfo(np.float64).max, neginf=0.0))


def _triples(evidence) -> tuple[tuple[str, str, float], ...]:
    """(channel, feature, z) triples from tuples or from attribution Contributions."""
    return tuple((e.channel, e.feature, float(e.z)) if hasattr(e, "channel") else (str(e[0]), str(e[1]), float(e[2]))
                 for e in evidence)
