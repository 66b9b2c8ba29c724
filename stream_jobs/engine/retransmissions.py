"""Retransmission classification (paper §6, injected packet loss): workload-intrinsic or fault-induced.

Bursty ML traffic retransmits on its own, and many of those retransmissions are spurious: the receiver had the
segment already and says so with a DSACK. What a lossy link adds is segments really lost, at a rate per segment sent
that the host's own history does not explain. Each host therefore keeps a count model: segments lost (retransmitted
minus DSACK-confirmed spurious) per segment sent, learned from its windows from the first one on and following the
traffic, and never expected above the median of its peers' (a host whose link was lossy from the start learns that
loss as its usual; its peers, whose traffic is alike, do not). Evidence that the rate has risen `rate_multiple`-fold accumulates window by window as a Poisson CUSUM; each
window adds at most `step_cap` (one burst of the workload never decides alone, and each second of traffic is counted
once although windows overlap, so one second's burst seen by the three windows that hold it stays below the alarm) and
the evidence never exceeds `alarm`, so an alarm ends within seconds of the loss ending however long the loss lasted.
A window whose receivers confirmed far more duplicates than it retransmitted says nothing of loss either way: those
DSACKs acknowledge other windows' segments in bulk, and subtracting them would hide real loss, so such a window leaves
the evidence and the model as they were. While the evidence is at `alarm` (and until it falls below half of it), the
host's retransmitting windows are fault-induced, unless most of its peers are in alarm at the same time: congestion
shared by the cluster is the workload's. Otherwise retransmissions are workload-intrinsic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

NONE = "none"
WORKLOAD_INTRINSIC = "workload-intrinsic"
FAULT_INDUCED = "fault-induced"


@dataclass(frozen=True)
class RetransWindow:
    """One host's TCP context over one window: segments retransmitted, confirmed spurious (DSACK) and sent."""

    host: str
    window_id: int
    retransmits: float
    segments_out: float
    spurious: float = 0.0

    @property
    def lost(self) -> float:
        """Retransmissions that were not spurious: the segments the network really lost."""
        if not np.isfinite(self.retransmits):
            return 0.0
        return float(max(self.retransmits - (self.spurious if np.isfinite(self.spurious) else 0.0), 0.0))

    @property
    def sent(self) -> float:
        return float(self.segments_out) if np.isfinite(self.segments_out) and self.segments_out > 0 else 0.0


@dataclass(frozen=True)
class RetransRules:
    """The count model's settings: the rise it looks for, evidence per alarm, per-window cap, history, peer share."""

    rate_multiple: float = 8.0
    alarm: float = 8.0
    step_cap: float = 2.0
    overlap: float = 3.0
    dsack_burst_multiple: float = 2.0
    history_windows: int = 600
    prior_segments: float = 1e4
    prior_lost: float = 1.0
    shared_fraction: float = 0.5

    def __post_init__(self):
        if (self.rate_multiple <= 1 or self.alarm <= 0 or self.step_cap <= 0 or self.overlap < 1
                or self.dsack_burst_multiple < 1 or self.history_windows < 1):
            raise ValueError("rate_multiple must exceed 1; alarm and step_cap must be > 0; overlap, "
                             "dsack_burst_multiple and history_windows ≥ 1")


@dataclass(frozen=True)
class RetransVerdict:
    """The category of one host-window's retransmissions, why, and how far the loss sits above expectation (in
    Poisson standard deviations)."""

    host: str
    window_id: int
    category: str
    reason: str
    rate_z: float
    evidence: float = 0.0


class RetransMonitor:
    """One host's count model and accumulated evidence of loss."""

    def __init__(self, rules: RetransRules = RetransRules()):
        self.rules = rules
        self.evidence = 0.0
        self.alarmed = False
        self._history = np.zeros((rules.history_windows, 2))  # (lost, sent) of the learnt windows, a ring
        self._learnt = 0
        self._lost = 0.0
        self._sent = 0.0

    @property
    def loss_rate(self) -> float:
        """Lost segments per segment sent, from the history and a weak prior (so a clean start is not zero)."""
        return (self._lost + self.rules.prior_lost) / (self._sent + self.rules.prior_segments)

    def observe(self, window: RetransWindow, peer_rate: float = math.inf) -> tuple[bool, float]:
        """Add one window, its loss expected at the host's usual rate or its peers' (`peer_rate`, lost per segment
        sent), whichever is lower; returns whether the host is in alarm and the window's loss z."""
        if self.confirms_other_windows(window):
            return self.alarmed, 0.0
        expected = min(self.loss_rate, peer_rate) * window.sent
        lost = window.lost
        step = (lost * math.log(self.rules.rate_multiple) - (self.rules.rate_multiple - 1) * expected)
        self.evidence = min(max(0.0, self.evidence + min(step / self.rules.overlap, self.rules.step_cap)),
                            self.rules.alarm)
        threshold = self.rules.alarm / 2 if self.alarmed else self.rules.alarm
        self.alarmed = self.evidence >= threshold
        if not self.alarmed:
            self._learn(lost, window.sent)
        return self.alarmed, (lost - expected) / math.sqrt(max(expected, 1.0))

    def confirms_other_windows(self, window: RetransWindow) -> bool:
        """Whether the window's DSACK-confirmed duplicates outnumber its retransmissions `dsack_burst_multiple`-fold
        and by more than two segments (so a confirmation that straddles two windows is not one): a bulk confirmation."""
        if not (np.isfinite(window.spurious) and np.isfinite(window.retransmits)):
            return False
        return window.spurious > self.rules.dsack_burst_multiple * max(window.retransmits, 0.0) + 2

    def _learn(self, lost: float, sent: float) -> None:
        """Add a window to the history, forgetting the oldest once `history_windows` are kept."""
        slot = self._learnt % len(self._history)
        if self._learnt >= len(self._history):
            self._lost -= float(self._history[slot, 0])
            self._sent -= float(self._history[slot, 1])
        self._history[slot] = lost, sent
        self._learnt += 1
        self._lost += lost
        self._sent += sent


def classify(window: RetransWindow, alarmed: bool, loss_z: float, peers_alarmed: int, peers: int,
             monitor: RetransMonitor) -> RetransVerdict:
    """The verdict of one window given its host's alarm state and how many of its peers are in alarm.

    >>> m = RetransMonitor()
    >>> classify(RetransWindow("h1", 7, 12, 6000, 12), False, 0.0, 0, 5, m).category
    'workload-intrinsic'
    """
    if not np.isfinite(window.retransmits) or window.retransmits <= 0:
        return RetransVerdict(window.host, window.window_id, NONE, "no retransmissions in the window", 0.0,
                              monitor.evidence)
    counts = (f"{window.lost:.0f} of {window.retransmits:.0f} retransmitted segments lost (the rest DSACK-confirmed "
              f"spurious) against {monitor.loss_rate * window.sent:.2f} expected from {window.sent:.0f} sent")
    shared = peers > 0 and peers_alarmed >= monitor.rules.shared_fraction * peers
    if alarmed and not shared:
        return RetransVerdict(window.host, window.window_id, FAULT_INDUCED,
                              f"{counts}; loss has stayed {monitor.rules.rate_multiple:g}× above the host's usual "
                              f"{monitor.loss_rate:.2g} per segment (evidence {monitor.evidence:.1f})", loss_z,
                              monitor.evidence)
    why = (f"shared by {peers_alarmed} of {peers} peers (congestion of the job)" if alarmed
           else "within the host's usual loss per segment")
    return RetransVerdict(window.host, window.window_id, WORKLOAD_INTRINSIC, f"{counts}; {why}", loss_z,
                          monitor.evidence)
