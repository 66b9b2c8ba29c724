"""How a flagged window becomes an incident: every duration in seconds, each with why, and their window counts at a
run's stride (see windows.windows_for)."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from stream_jobs.engine.windows import windows_for


@dataclass(frozen=True)
class DecisionSettings:
    """The rules from a host's persisted channels to the incidents an operator is paged for. Durations are seconds."""

    # A weak finding (a level just over its edge, or a spread) must stay flagged this long to open an incident: a
    # burst lifts a spread far more than a level, and for as long
    weak_hold_s: float = 1.0
    # A finding this many allowed distances out, led by a level, is clear at once
    clear_departure: float = 2.0
    # An incident closes this long after its last anomalous window, and its closing is sent
    close_after_s: float = 30.0
    # The same symptom back within this long of its incident's last anomalous window reopens that incident
    reopen_within_s: float = 300.0
    # A window led by a channel an incident never held, once it has lasted this long, opens its own incident
    renew_after_s: float = 60.0
    # An open incident is told again when its peak severity grows by this factor
    escalation: float = 1.5
    # A channel that leaves its band on a peer within this long of the host's departure moved with the job
    shared_within_s: float = 5.0
    # ... on this many peers (all of them, in a smaller cluster)
    shared_by_hosts: float = 1.0
    # A new cause on a host this soon after another began is the same fault reaching another subsystem
    join_within_s: float = 3.0
    # A lossy link's effects show on its peers within this long of its loss verdict
    loss_effects_within_s: float = 60.0
    # A host's loss rate is learned from its windows of this long past
    loss_history_s: float = 600.0
    # A host whose latest window is this far behind its cluster's newest no longer holds the others back
    stale_after_s: float = 30.0
    # How long a compared window's departing channels are kept, for summaries that arrive late
    departures_kept_s: float = 600.0
    # A workload is taken to have started or stopped once the host's activity has held its new side this long
    regime_hold_s: float = 60.0
    # The host's activity (CPU busy %, or GPU utilisation %) is idle at or below this, busy at or above busy_above_pct
    idle_below_pct: float = 5.0
    busy_above_pct: float = 20.0
    # After a workload change the host's findings are held back this long while its baseline is learned again
    settle_s: float = 30.0
    # A host differs from its peers once a channel has deviated this long
    peer_hold_s: float = 300.0
    # How long a host's place among its peers is learned before it is compared
    peer_learn_s: float = 120.0
    # A host's trouble (errors, drops, retransmissions, throttled periods) is weighed against its peers' over this long
    peer_trouble_span_s: float = 120.0
    # Hosts alike in their trouble are told apart about this often a day, per host
    peer_trouble_risk: float = 0.1

    def __post_init__(self):
        for item in fields(self):
            value = getattr(self, item.name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"decision.{item.name} is {value!r}; expected a finite number ≥ 0")
        if self.escalation <= 1:
            raise ValueError(f"decision.escalation is {self.escalation}; expected above 1")
        if self.idle_below_pct >= self.busy_above_pct:
            raise ValueError(f"decision.idle_below_pct {self.idle_below_pct} must be below busy_above_pct "
                             f"{self.busy_above_pct}")
        if self.reopen_within_s < self.close_after_s:
            raise ValueError(f"decision.reopen_within_s {self.reopen_within_s} is below close_after_s "
                             f"{self.close_after_s}; an incident can only reopen after it closed")


@dataclass(frozen=True)
class DecisionTiming:
    """The decision's durations as window counts at one stride, for the rules that look back over window ids."""

    shared_within: int
    join_within: int
    loss_effects_within: int
    loss_history: int
    stale_after: int
    departures_kept: int
    regime_hold: int
    peer_hold: int
    peer_learn: int

    @classmethod
    def of(cls, settings: DecisionSettings, stride_s: float) -> DecisionTiming:
        windows = lambda seconds: windows_for(seconds, stride_s)  # noqa: E731
        return cls(windows(settings.shared_within_s), windows(settings.join_within_s),
                   windows(settings.loss_effects_within_s), windows(settings.loss_history_s),
                   windows(settings.stale_after_s),
                   windows(settings.departures_kept_s), windows(settings.regime_hold_s),
                   windows(settings.peer_hold_s), max(10, windows(settings.peer_learn_s)))
