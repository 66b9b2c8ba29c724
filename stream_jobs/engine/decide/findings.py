"""A host's own findings in one window: which of its channels depart, which persisted departures are its own (not
shared with its peers), how they group into causes strongest first, the channel each cause is named after, and how
long a finding must hold before it opens an incident."""

from __future__ import annotations

import numpy as np

from schemas.channels import counts_page_work
from schemas.records import DEPARTS_AT, HostWindow, PersistedChannel
from stream_jobs.engine.decide.incidents import LEVEL_FEATURES
from stream_jobs.engine.decide.naming import lead, naming_rank
from stream_jobs.engine.decide.settings import DecisionSettings

NOTHING_DEPARTS: frozenset[str] = frozenset()

Departures = dict[int, dict[str, frozenset[str]]]


def departing_channels(summary: HostWindow) -> frozenset[str]:
    """The channels the host reported outside their bands in the window (in either direction: a level and its
    spread may move apart)."""
    if summary.departures is None:
        return NOTHING_DEPARTS
    outside = np.flatnonzero(np.abs(summary.departures) >= DEPARTS_AT)
    return frozenset(summary.names[i] for i in outside) if len(outside) else NOTHING_DEPARTS


def departure_onset(kept: Departures, host: str, channel: str, window_id: int, bridge: int) -> int | None:
    """The first window of the host's current run of departures on the channel, bridging returns to its band of up
    to `bridge` windows; None when it has not departed in that many windows up to `window_id`."""
    onset, quiet, window = None, 0, window_id
    while window in kept and quiet <= bridge:
        if channel in kept[window].get(host, NOTHING_DEPARTS):
            onset, quiet = window, 0
        else:
            quiet += 1
        window -= 1
    return onset


def departed_since(kept: Departures, channels: set[str], since: int) -> set[str]:
    """The hosts that left their band on any of `channels` in a kept window from `since` on."""
    return {host for window, departing in kept.items() if window >= since
            for host, names in departing.items() if not channels.isdisjoint(names)}


def shared_with_peers(kept: Departures, summary: HostWindow, within: int) -> list[frozenset[str]]:
    """For each peer of the host in the window, those of the host's persisted channels whose departure on the peer
    began within `within` windows of its departure on the host (hosts sample at their own instants and learn their own
    bands, so a change they share does not cross every band in the same window). A peer out on a channel since long
    before is not sharing the host's change: a page cache a fault filled on one host stays out for minutes, and would
    hide the same channel's own change on another."""
    window_id = summary.window_id
    peers = [peer for peer in kept.get(window_id, {}) if peer != summary.host]
    channels = {summary.names[p.index] for p in summary.persisted}
    if not channels:
        return [NOTHING_DEPARTS] * len(peers)
    onsets = {c: departure_onset(kept, summary.host, c, window_id, within) or window_id for c in channels}
    candidates = departed_since(kept, channels, min(onsets.values()) - within)
    return [frozenset(c for c in channels if _began_together(kept, peer, c, window_id, onsets[c], within))
            if peer in candidates else NOTHING_DEPARTS for peer in peers]


def _began_together(kept: Departures, peer: str, channel: str, window_id: int, onset: int, within: int) -> bool:
    """Whether the peer's current run of departures on the channel began within `within` windows of `onset`."""
    peer_onset = departure_onset(kept, peer, channel, window_id, within)
    return peer_onset is not None and abs(peer_onset - onset) <= within


def own_departures(summary: HostWindow, peers_departing: list[frozenset[str]],
                   shared_by_hosts: float = 1.0) -> list[PersistedChannel]:
    """The host's persisted channels that fewer than `shared_by_hosts` of its peers (all of them, in a smaller
    cluster) left their bands on at about the time the host did: a change they share moved with the job (a
    synchronised checkpoint, a new epoch, shared infrastructure), not with the host."""
    if not summary.persisted or summary.departures is None:
        return []
    needed = min(shared_by_hosts, len(peers_departing))
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


def window_lead(summary: HostWindow, persisted: list[PersistedChannel]) -> PersistedChannel:
    """The channel a cause's window is named and told after (see naming.lead), of the channels it holds."""
    return lead(persisted, lambda p: naming_rank(summary.names[p.index], p.subsystem),
                lambda p: departure_of(summary, p))


def hold_s(departure: float, feature: str, settings: DecisionSettings) -> float:
    """How long a finding must stay flagged to open an incident: a level (its mean, or its residual from a correlated
    channel) at least `clear_departure` allowed distances out opens at once, since the watch counts a level only once
    it has departed for longer than a window, its middle third too, which a burst of a second or two never does; a
    level just over its edge, or a spread, must hold `weak_hold_s`: a burst lifts a spread far more than a level."""
    clear = departure >= settings.clear_departure and feature in LEVEL_FEATURES
    return 0.0 if clear else settings.weak_hold_s


def departure_of(summary: HostWindow, persisted: PersistedChannel) -> float:
    """How far, in allowed distances, the feature that persisted lies outside its band (another feature of the
    channel may lie further out for a window without having persisted)."""
    if persisted.departure:
        return abs(float(persisted.departure))
    return abs(float(summary.departures[persisted.index]))
