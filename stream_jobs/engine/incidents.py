"""Incidents: runs of anomalous windows on one host, reported as alerts that open, update and close.

Operators act on incidents, not on windows (paper §4.4: "the identification of persistent and meaningful
bottlenecks"): consecutive anomalous windows of a host, allowing quiet gaps shorter than `close_after` windows,
form one incident, announced once when it opens, again only when its severity escalates or its dominant subsystem
changes, and once when `close_after` windows have passed without an anomaly. A tracker may hold a quiet incident
`recur_within` windows longer: a symptom that comes back on the same channels (a lasting change that flickers in
and out of its band) continues it instead of paging again, while a window led by another channel, or one in which a
channel the incident never held leaves its level, closes it and opens its own. Likewise an incident that has lasted `renew_after` windows (a page cache a fault filled, out of its band
for minutes) is closed by a window led by a channel it has never held, which opens its own: a new fault on the host
is not absorbed by an old change that has not yet been adopted. A workload starting or stopping is
not an anomaly: RegimeDetector spots it and the tracker reports it once as a "regime" notice instead, then holds
the host's anomalies back for `settle_windows` windows while its baseline is learned again.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np

from schemas.channels import CPU
from stream_jobs.engine.severity import severity_scale, severity_word
from stream_jobs.engine.signatures import match_signature

EVIDENCE_LIMIT = 5
SUMMARY_EVIDENCE = 3
LEVEL_FEATURES = frozenset({"mean", "residual"})


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
class _FlaggedWindow:
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

    def add(self, window: _FlaggedWindow) -> None:
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
        """The subsystem with the largest summed severity (alphabetical among ties, for determinism), CPU only when
        no other was named: CPU time is how most faults show (reclaim's system time under memory pressure, I/O wait
        under a write burst), so a CPU channel that moves with another subsystem's is that subsystem's work."""
        named = {subsystem: severity for subsystem, severity in self.severity_by_subsystem.items()
                 if subsystem != CPU} or self.severity_by_subsystem
        return min(named.items(), key=lambda item: (-item[1], item[0]))[0]

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

    def snapshot(self) -> Incident:
        return Incident(self.incident_id, self.host, self.first_window_id, self.last_window_id, self.start_ns,
                        self.end_ns, self.windows, self.peak, self.subsystem, self.top_evidence())


@dataclass
class _HostState:
    incident: _OpenIncident | None = None
    pending: list[_FlaggedWindow] = field(default_factory=list)
    last_window_id: int | None = None
    settled_after: int | None = None


class IncidentTracker:
    """Turns per-window verdicts of many hosts into deduplicated alert events."""

    def __init__(self, open_after: int = 1, close_after: int = 3, escalation: float = 1.5, settle_windows: int = 30,
                 recur_within: int = 0, renew_after: int = 0):
        if (open_after < 1 or close_after < 1 or escalation <= 1.0 or settle_windows < 0 or recur_within < 0
                or renew_after < 0):
            raise ValueError(f"open_after {open_after} and close_after {close_after} must be ≥ 1, escalation "
                             f"{escalation} > 1, settle_windows {settle_windows}, recur_within {recur_within} and "
                             f"renew_after {renew_after} ≥ 0")
        self.open_after = open_after
        self.close_after = close_after
        self.recur_within = recur_within
        self.renew_after = renew_after
        self.escalation = escalation
        self.settle_windows = settle_windows
        self._hosts: dict[str, _HostState] = defaultdict(_HostState)

    def update(self, host: str, window_id: int, start_ns: int, end_ns: int, flagged: bool, severity: float,
               subsystem: str, evidence=(), open_after: int | None = None, lead=None) -> list[AlertEvent]:
        """Feed one window's verdict; returns the alert events it causes. Late or repeated windows are ignored.
        `open_after`, when given, is how many consecutive flagged windows this window needs to open an incident,
        instead of the tracker's; `lead`, the strongest (channel, feature, z) of `subsystem`, which the alert's
        words give first when the incident is named after it (evidence comes strongest first, of any subsystem)."""
        state = self._hosts[host]
        if state.last_window_id is not None and window_id <= state.last_window_id:
            return []
        state.last_window_id = window_id
        flagged = flagged and (state.settled_after is None or window_id > state.settled_after)
        events = self._expire(state, window_id, flagged)
        if not flagged:
            state.pending = []
            return events
        window = _FlaggedWindow(window_id, start_ns, end_ns, _finite(severity), subsystem, _triples(evidence),
                                _triples([lead])[0] if lead is not None else None)
        if state.incident and window_id - state.incident.last_window_id - 1 >= self.close_after:
            if not _only_its_symptoms(state.incident, window):
                events += self._close(state, "")
            else:
                return events + self._extend(state, window, "back after a quiet spell")
        elif state.incident and self._renewed_by(state.incident, window):
            events += self._close(state, "a new symptom opens its own incident")
        if state.incident:
            return events + self._extend(state, window)
        return events + self._maybe_open(host, state, window, open_after or self.open_after)

    def _renewed_by(self, incident: _OpenIncident, window: _FlaggedWindow) -> bool:
        """Whether the window, led by a channel the incident has never held, closes an incident that has lasted
        `renew_after` windows (0: never)."""
        return (self.renew_after > 0 and window.window_id - incident.first_window_id >= self.renew_after
                and not _same_symptom(incident, window))

    def regime_change(self, host: str, window_id: int, start_ns: int, end_ns: int, change: str) -> list[AlertEvent]:
        """Close the host's incident, announce the workload change once and hold its anomalies for a while."""
        state = self._hosts[host]
        state.pending, state.settled_after = [], window_id + self.settle_windows
        events = self._close(state, f"explained by: {change}") if state.incident else []
        notice = AlertEvent(f"{host}:{window_id}:regime", host, "closed", start_ns, end_ns, 0.0, "",
                            f"{change} on {host} at window {window_id}", "", "regime")
        return events + [notice]

    def settling(self, host: str, window_id: int) -> bool:
        """Whether the host's anomalies are still held back after a workload change."""
        state = self._hosts.get(host)
        return state is not None and state.settled_after is not None and window_id <= state.settled_after

    def close_all(self) -> list[AlertEvent]:
        """Close every open incident (end of a run), host by host in name order."""
        events = []
        for host in sorted(self._hosts):
            state = self._hosts[host]
            state.pending = []
            if state.incident:
                events += self._close(state, "run ended")
        return events

    def open_count(self) -> int:
        """Incidents open now, over all hosts."""
        return sum(state.incident is not None for state in self._hosts.values())

    def open_since_ns(self, host: str) -> int | None:
        """The start of the host's open or pending incident: a restart must see its windows again to continue it."""
        state = self._hosts.get(host)
        if state is None:
            return None
        if state.incident is not None:
            return state.incident.start_ns
        return state.pending[0].start_ns if state.pending else None

    def held_quietly(self, host: str, window_id: int) -> frozenset[str] | None:
        """The channels of the host's incident when it is quiet (no anomalous window for `close_after` windows,
        held open only in case its symptom returns); None when it is not quiet or there is none."""
        state = self._hosts.get(host)
        incident = state.incident if state is not None else None
        if incident is None or window_id - incident.last_window_id - 1 < self.close_after:
            return None
        return frozenset(channel for channel, _ in incident.evidence_counts)

    def forget(self, host: str) -> None:
        """Drop the host's incident state, e.g. when another worker takes the host over."""
        self._hosts.pop(host, None)

    def open_incidents(self) -> list[Incident]:
        return [s.incident.snapshot() for _, s in sorted(self._hosts.items()) if s.incident]

    def _expire(self, state: _HostState, window_id: int, flagged: bool) -> list[AlertEvent]:
        """Close the incident once `close_after` windows have passed since its last anomalous one."""
        if state.incident is None:
            return []
        quiet = window_id - state.incident.last_window_id - (1 if flagged else 0)
        return self._close(state, "") if quiet >= self.close_after + self.recur_within else []

    def _maybe_open(self, host: str, state: _HostState, window: _FlaggedWindow, open_after: int) -> list[AlertEvent]:
        if state.pending and state.pending[-1].window_id != window.window_id - 1:
            state.pending = []
        state.pending.append(window)
        if len(state.pending) < open_after:
            return []
        incident = _OpenIncident(host, state.pending[0].window_id, state.pending[0].start_ns)
        for pending in state.pending:
            incident.add(pending)
        state.incident, state.pending = incident, []
        return self._emit(incident, "open", "")

    def _extend(self, state: _HostState, window: _FlaggedWindow, resumed: str = "") -> list[AlertEvent]:
        incident = state.incident
        incident.add(window)
        escalated = incident.peak > incident.reported_severity and (
            incident.reported_severity <= 0 or incident.peak >= self.escalation * incident.reported_severity)
        if resumed or escalated or incident.subsystem != incident.reported_subsystem:
            return self._emit(incident, "update", resumed)
        return []

    def _close(self, state: _HostState, reason: str) -> list[AlertEvent]:
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


def _same_symptom(incident: _OpenIncident, window: _FlaggedWindow) -> bool:
    """Whether the window's leading channel (evidence comes strongest first) is one the incident already holds; a
    window without evidence cannot tell, and is taken as the same."""
    if not window.evidence:
        return True
    lead = window.evidence[0][0]
    return any(channel == lead for channel, _ in incident.evidence_counts)


def _only_its_symptoms(incident: _OpenIncident, window: _FlaggedWindow) -> bool:
    """Whether the window's leading channel is one the incident holds and no other channel it never held has left
    its level (mean, or residual from a correlated channel): a lasting change that flickers back shows the channels
    it showed, perhaps with a spread or two that a burst drags along; a new fault that moves one of them (page
    allocations) brings a level of its own too (the page faults of a new allocation)."""
    held = {channel for channel, _ in incident.evidence_counts}
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


@dataclass
class _Regime:
    current: str | None = None
    candidate: str | None = None
    streak: int = 0
    last_window_id: int | None = None


class RegimeDetector:
    """Decides when a host's workload started or stopped from its activity level (CPU busy % or GPU utilisation %).

    A level at or above `busy_above` is busy, at or below `idle_below` idle, between them neither (hysteresis). The
    host changes regime after `persist_windows` consecutive windows on the other side (a minute by default: a burner
    or a stall shorter than that is a fault, which the channel watch reports within seconds, not a new workload to
    learn); the first regime a host settles in is adopted silently, since its start was not seen.
    """

    def __init__(self, idle_below: float = 5.0, busy_above: float = 20.0, persist_windows: int = 60):
        if not idle_below < busy_above or persist_windows < 1:
            raise ValueError(f"idle_below {idle_below} must be < busy_above {busy_above}, persist_windows ≥ 1")
        self.idle_below = idle_below
        self.busy_above = busy_above
        self.persist_windows = persist_windows
        self._hosts: dict[str, _Regime] = defaultdict(_Regime)

    def observe(self, host: str, window_id: int, level: float) -> str | None:
        """'workload started' or 'workload stopped' on the window that confirms a change, otherwise None."""
        regime = self._hosts[host]
        if regime.last_window_id is not None and window_id <= regime.last_window_id:
            return None
        contiguous = regime.last_window_id is None or window_id == regime.last_window_id + 1
        regime.last_window_id = window_id
        side = self._side(level)
        if side is None or side == regime.current:
            regime.candidate, regime.streak = None, 0
            return None
        regime.streak = regime.streak + 1 if side == regime.candidate and contiguous else 1
        regime.candidate = side
        if regime.streak < self.persist_windows:
            return None
        previous, regime.current, regime.candidate, regime.streak = regime.current, side, None, 0
        if previous is None:
            return None
        return "workload started" if side == "busy" else "workload stopped"

    def forget(self, host: str) -> None:
        self._hosts.pop(host, None)

    def current(self, host: str) -> str | None:
        """'busy', 'idle', or None while the host has not settled."""
        return self._hosts[host].current if host in self._hosts else None

    def _side(self, level: float) -> str | None:
        if level >= self.busy_above:
            return "busy"
        if level <= self.idle_below:
            return "idle"
        return None
