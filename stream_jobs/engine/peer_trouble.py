"""Trouble one host has and its peers do not: errors, drops, retransmissions, throttled periods, OOM kills.

Ranks of one job differ in how much work they do (a server sends more than its clients), so a host's usual place
among its peers is learned for work channels (crosshost.PeerComparator). They never differ in how much trouble is
their normal, so trouble channels (kind "event") are compared without a learned offset, and a host that had its
trouble from the start (a lossy link, a CPU quota that throttles it) is found as soon as its peers are compared.

A window counts for a host when it had more of a trouble channel than every one of its P peers (half an event more,
so that a rate's rounding is not a difference). Among hosts that are alike, each is the one with the most in at most
1 / (P + 1) of windows, whatever the counts' distribution: bursts, long quiet spells, one unit or another. Over the
non-overlapping windows of the last `span_s` seconds, a host that counted in K of n windows differs when the
binomial tail P(≥ K | n, 1 / (P + 1)) lies below `alpha`, set so that alike hosts are told apart about `risk_per_day`
times a day: a strong, steady excess is told after a few windows, a weak one later, a burst or two never.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np
from scipy.stats import binom, norm

from schemas.channels import AGENT_PREFIX
from stream_jobs.engine.crosshost import Z_CAP, PeerDeviation

TROUBLE_KIND = "event"
SECONDS_PER_DAY = 86_400.0
# A host counts a window only with at least this many more events than its busiest peer
MIN_EXCESS_EVENTS = 0.5


@dataclass(frozen=True)
class TroubleFinding:
    """A host with more of its listed trouble channels than its peers: its count over the span, the peers' median
    count, in how many of the span's windows it had the most, and the binomial tail of that, most telling first."""

    host: str
    window_id: int
    channels: tuple[str, ...]
    counts: tuple[float, ...]
    peer_counts: tuple[float, ...]
    windows_most: tuple[int, ...]
    windows: int
    tail: tuple[float, ...]
    span_s: float
    peers: int
    every: int = 1

    def as_deviation(self) -> PeerDeviation:
        """The finding as the decision takes peer findings: each channel's tail as a normal-equivalent z, told in
        the operator's units, held for the windows it was counted over."""
        z = tuple(float(min(norm.isf(t), Z_CAP)) for t in self.tail)
        return PeerDeviation(self.host, self.window_id, self.channels, z, self.windows * self.every, self.peers,
                             self.told())

    def told(self) -> str:
        """The strongest channel in the operator's units, e.g. 'h2 had 161 snmp.Tcp.RetransSegs in the last 30 s,
        its 5 peers a median of 4; the most of all in 10 of 10 windows'."""
        return (f"{self.host} had {self.counts[0]:.4g} {self.channels[0]} in the last {self.span_s:g} s, its "
                f"{self.peers} peers a median of {self.peer_counts[0]:.4g}; the most of all in "
                f"{self.windows_most[0]} of {self.windows} windows")


class PeerTrouble:
    """Compares each window's hosts' trouble channels and reports hosts that keep having more than all their peers.
    `window_s` and `stride_s` are the windows' length and spacing; only windows that do not overlap are counted."""

    def __init__(self, window_s: float, stride_s: float, span_s: float = 120.0, risk_per_day: float = 0.1,
                 min_peers: int = 2, top: int = 5):
        if window_s <= 0 or stride_s <= 0 or span_s < window_s or risk_per_day <= 0 or min_peers < 1 or top < 1:
            raise ValueError(f"window_s {window_s}, stride_s {stride_s} and risk_per_day {risk_per_day} must be > 0, "
                             f"span_s {span_s} ≥ window_s, min_peers {min_peers} and top {top} ≥ 1")
        self.window_s, self.stride_s, self.risk_per_day = window_s, stride_s, risk_per_day
        self.min_peers, self.top = min_peers, top
        self.every = max(1, round(window_s / stride_s))
        self.span_windows = max(1, int(span_s // window_s))
        self._history: dict[str, deque] = {}
        self._names: tuple[str, ...] = ()

    def counts(self, window_id: int) -> bool:
        """Whether a window is one of the non-overlapping ones compared."""
        return window_id % self.every == 0

    def compare(self, window_id: int, hosts: tuple[str, ...], names: tuple[str, ...], kinds: tuple[str, ...],
                means: np.ndarray) -> list[TroubleFinding]:
        """Findings for this window from the hosts' channel means (hosts × names, rates per second)."""
        if not self.counts(window_id) or len(hosts) < self.min_peers + 1 or len(kinds) != len(names):
            return []
        trouble = np.array([kind == TROUBLE_KIND and not name.startswith(AGENT_PREFIX)
                            for name, kind in zip(names, kinds)], dtype=bool)
        if not trouble.any():
            return []
        trouble_names = tuple(n for n, t in zip(names, trouble) if t)
        if trouble_names != self._names:
            self._names, self._history = trouble_names, {}
        counts = np.nan_to_num(np.asarray(means, dtype=np.float64)[:, trouble] * self.window_s)
        most = counts >= _busiest_peer(counts) + MIN_EXCESS_EVENTS
        for row, host in enumerate(hosts):
            self._history.setdefault(host, deque(maxlen=self.span_windows)).append((counts[row], most[row]))
        alpha = self._alpha(len(hosts), len(trouble_names))
        return [finding for row, host in enumerate(hosts)
                if (finding := self._finding(window_id, host, hosts, alpha)) is not None]

    def _alpha(self, hosts: int, channels: int) -> float:
        """The tail below which a host differs: the promise shared over every host, channel and counted window of
        a day."""
        counted_per_day = SECONDS_PER_DAY / (self.every * self.stride_s)
        return self.risk_per_day / (hosts * channels * counted_per_day)

    def _finding(self, window_id: int, host: str, hosts: tuple[str, ...], alpha: float) -> TroubleFinding | None:
        history = self._history[host]
        windows = len(history)
        most = np.sum([m for _, m in history], axis=0)
        tail = binom.sf(most - 1, windows, 1.0 / len(hosts))
        differs = np.flatnonzero(tail < alpha)
        if not len(differs):
            return None
        totals = {h: np.sum([c for c, _ in self._history[h]], axis=0) for h in hosts if h in self._history}
        mine = totals.pop(host)
        peer_median = np.median(np.vstack(list(totals.values())), axis=0)
        order = differs[np.lexsort((-(mine[differs] - peer_median[differs]), tail[differs]))][:self.top]
        return TroubleFinding(host, window_id, tuple(self._names[i] for i in order),
                              tuple(float(mine[i]) for i in order), tuple(float(peer_median[i]) for i in order),
                              tuple(int(most[i]) for i in order), windows, tuple(float(tail[i]) for i in order),
                              windows * self.window_s, len(hosts) - 1, self.every)


def _busiest_peer(counts: np.ndarray) -> np.ndarray:
    """For each host (row), the largest count of each channel among the other hosts."""
    if counts.shape[0] < 2:
        return np.full_like(counts, math.inf)
    order = np.sort(counts, axis=0)
    largest, second = order[-1], order[-2]
    return np.where(counts >= largest, second, largest)
