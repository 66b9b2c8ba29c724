"""A host's own findings as the cluster stage tells them: which of its departing channels its peers left their bands
on too, how the rest group into causes (subsystems), when a cause opens an incident, and under which name."""

from __future__ import annotations

import numpy as np

from schemas.channels import counts_page_work
from schemas.records import DEPARTS_AT, HostWindow, PersistedChannel
from stream_jobs.engine.incidents import CPU

# A channel that leaves its band on this many other hosts of the cluster within SHARED_WITHIN_WINDOWS of each other
# moved with the job (a synchronised checkpoint, a new epoch, a change on shared infrastructure or a shared kernel),
# not because of something on this host.
SHARED_BY_HOSTS = 1
SHARED_WITHIN_WINDOWS = 5
# A host's new cause this few windows after another began is the same fault reaching another subsystem
JOIN_WITHIN_WINDOWS = 3
# CPU time is told under another subsystem whose state persisted with it when that state lies within this factor of
# the CPU time's distance (two steps of the severity scale): a CPU burner's new processes commit a little memory too,
# while a write burst's disk lies far beyond the I/O wait it causes.
CPU_YIELDS_WITHIN = 4.0
# A host's own finding whose level lies this many limits out (twice the allowed distance) is clear at once (see
# windows_to_open)
CLEAR_DEPARTURE = 2.0
NOTHING_DEPARTS: frozenset[str] = frozenset()


def cause_key(host: str, cause: str) -> str:
    return f"{host}/anomaly:{cause}"


def recent_lead(began: dict[str, int], window_id: int) -> str | None:
    """The cause whose incident began last, if it began within JOIN_WITHIN_WINDOWS windows of this one."""
    recent = [(window, cause) for cause, window in began.items() if window_id - window <= JOIN_WITHIN_WINDOWS]
    return max(recent)[1] if recent else None


def departure_onset(kept: dict[int, dict[str, frozenset[str]]], host: str, channel: str, window_id: int) -> int | None:
    """The first window of the host's current run of departures on the channel, bridging returns to its band of up
    to SHARED_WITHIN_WINDOWS windows; None when it has not departed in that many windows up to `window_id`."""
    onset, quiet, window = None, 0, window_id
    while window in kept and quiet <= SHARED_WITHIN_WINDOWS:
        if channel in kept[window].get(host, NOTHING_DEPARTS):
            onset, quiet = window, 0
        else:
            quiet += 1
        window -= 1
    return onset


def departed_since(kept: dict[int, dict[str, frozenset[str]]], channels: set[str], since: int) -> set[str]:
    """The hosts that left their band on any of `channels` in a kept window from `since` on: the only ones whose
    departure on one of them can have begun within SHARED_WITHIN_WINDOWS of a departure that began after `since`."""
    return {host for window, departing in kept.items() if window >= since
            for host, names in departing.items() if not channels.isdisjoint(names)}


def began_together(peer_onset: int | None, onset: int) -> bool:
    return peer_onset is not None and abs(peer_onset - onset) <= SHARED_WITHIN_WINDOWS


def windows_to_open(departure: float, feature: str = "mean") -> int:
    """A host's own finding led by a channel's level (its mean, or its residual from a correlated channel) at least
    CLEAR_DEPARTURE limits out opens its incident in its first window: the watch counts a level only once it has
    departed for longer than a window, its middle third too, which a burst of a second or two never does. A level
    just over its edge, or a finding led by a spread within the window, must be flagged a second window running: a
    burst lifts a spread far more than a level, and for as long."""
    return 1 if departure >= CLEAR_DEPARTURE and feature in ("mean", "residual") else 2


def departing_channels(summary: HostWindow) -> frozenset[str]:
    """The channels the host reported outside their bands in the window (in either direction: a level and its
    spread may move apart)."""
    if summary.departures is None:
        return NOTHING_DEPARTS
    outside = np.flatnonzero(np.abs(summary.departures) >= DEPARTS_AT)
    return frozenset(summary.names[i] for i in outside) if len(outside) else NOTHING_DEPARTS


def own_departures(summary: HostWindow, peers_departing: list[frozenset[str]]) -> list[PersistedChannel]:
    """The host's persisted channels that fewer than SHARED_BY_HOSTS of its peers (all of them, in a smaller
    cluster) left their bands on at about the time the host did (see ClusterStage._peers_departing)."""
    if not summary.persisted or summary.departures is None:
        return []
    needed = min(SHARED_BY_HOSTS, len(peers_departing))
    if needed == 0:
        return list(summary.persisted)
    return [persisted for persisted in summary.persisted
            if sum(summary.names[persisted.index] in names for names in peers_departing) < needed]


def causes_strongest_first(summary: HostWindow, own: list[PersistedChannel],
                           causes: set[str]) -> list[tuple[str, list[PersistedChannel]]]:
    """Every cause (subsystem) the host has had, each with its own departing channels furthest first; the cause
    with the furthest channel first, so causes that open in the same window are told strongest first. Memory work
    (see counts_page_work) is the cause of the furthest channel that is not: a fork storm's reused pages are its
    forks' doing, not a memory fault of their own."""
    by_cause: dict[str, list[PersistedChannel]] = {cause: [] for cause in causes}
    furthest_first = sorted(own, key=lambda p: (-departure_of(summary, p), p.index))
    page_work = [counts_page_work(summary.names[p.index]) for p in furthest_first]
    work_cause = next((p.subsystem for p, work in zip(furthest_first, page_work) if not work), None)
    for persisted, work in zip(furthest_first, page_work):
        by_cause.setdefault(work_cause if work and work_cause else persisted.subsystem, []).append(persisted)
    strongest = lambda item: max((departure_of(summary, p) for p in item[1]), default=0.0)  # noqa: E731
    return sorted(by_cause.items(), key=lambda item: (-strongest(item), item[0]))


def named_subsystem(summary: HostWindow, persisted: list[PersistedChannel]) -> str:
    """The subsystem a window's channels are told under: the strongest channel's, but CPU time that moves with
    another subsystem's state is that subsystem's work (see IncidentTracker's naming) when the state persisted within
    CPU_YIELDS_WITHIN of the CPU time's departure; and memory work (see counts_page_work) is the work of whatever
    moves with it: of the host's other channels in the window, when the channels given are memory work alone."""
    rank = lambda p: naming_rank(summary.names[p.index], p.subsystem)  # noqa: E731
    pool = persisted if any(rank(p) < 2 for p in persisted) else [*persisted, *summary.persisted]
    cpu = [departure_of(summary, p) for p in pool if rank(p) == 1]
    if not cpu:
        return min(pool, key=rank).subsystem
    state = max((p for p in pool if rank(p) == 0), key=lambda p: departure_of(summary, p), default=None)
    if state is not None and departure_of(summary, state) >= max(cpu) / CPU_YIELDS_WITHIN:
        return state.subsystem
    return CPU


def naming_rank(name: str, subsystem: str) -> int:
    """0 for a channel that tells a subsystem's state, 1 for CPU, 2 for memory work: a window is named after its
    strongest channel of the lowest rank."""
    return 2 if counts_page_work(name) else 1 if subsystem == CPU else 0


def told_lead(summary: HostWindow, persisted: list[PersistedChannel], named: str) -> tuple[str, str, float] | None:
    """The (channel, feature, z) an incident named `named` tells first: its strongest channel of that subsystem,
    memory work last (a fork storm's forks before the pages its children reuse; see counts_page_work)."""
    candidates = sorted((p for p in persisted if p.subsystem == named),
                        key=lambda p: counts_page_work(summary.names[p.index]))
    return (summary.names[candidates[0].index], candidates[0].feature, candidates[0].z) if candidates else None


def departure_of(summary: HostWindow, persisted: PersistedChannel) -> float:
    """How far, in band widths, the feature that persisted lies outside its band (another feature of the channel
    may lie further out for a window without having persisted)."""
    if persisted.departure:
        return abs(float(persisted.departure))
    return abs(float(summary.departures[persisted.index]))
