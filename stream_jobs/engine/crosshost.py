"""Cross-host comparison (paper §3.1 reporting, §6 HugePages case): a host that persistently differs from its peers.

Each window, every host's channel means (static channels included: a host's HugePages_Total never varies on the
host itself, only between hosts) are compared with the cluster's. The cluster level of a channel is its median
across hosts and its spread the MAD, as in Minder's straggler detection: robust statistics ignore a minority of odd
hosts, where a leave-one-out comparison would make both halves of a split cluster look deviant. Each host's
usual offset from the cluster is learned first (ranks of a job differ by design), and a host becomes a finding only
once the same channel has left its usual offset for minutes, so one slow step, one burst or a job phase is not, and
neither is a different noisy channel crossing the threshold each window.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from schemas.channels import AGENT_PREFIX
from stream_jobs.engine.column_stats import MAD_TO_SIGMA, column_nanmedians
from stream_jobs.engine.detectors.zscore import capped
from stream_jobs.engine.half_precision import Float16Rows

# |z| is capped so that a channel that is exactly equal on all peers but one ranks, but does not read as 1e12.
Z_CAP = 1_000.0
# Residuals kept per host while its offsets are learned: a long baseline is thinned evenly to this many windows.
LEARNING_KEPT = 512


@dataclass(frozen=True, eq=False)
class HostSummary:
    """One host's channel means over one window; `learning` while the host still learns its own baseline (its usual
    offsets from its peers are learned over that same span)."""

    host: str
    window_id: int
    names: tuple[str, ...]
    values: np.ndarray
    learning: bool = False
    kinds: tuple[str, ...] = ()  # one per name where the host says them (gauge, counter, event, static, derived)

    def __post_init__(self):
        if len(self.names) != len(self.values):
            raise ValueError(f"{self.host}: {len(self.names)} names but {len(self.values)} values")
        if self.kinds and len(self.kinds) != len(self.names):
            raise ValueError(f"{self.host}: {len(self.names)} names but {len(self.kinds)} kinds")


@dataclass(frozen=True)
class PeerDeviation:
    """A host whose listed channels have differed from its peers for `persisted_windows` windows, most deviant first."""

    host: str
    window_id: int
    channels: tuple[str, ...]
    z: tuple[float, ...]
    persisted_windows: int
    peers: int
    claim: str = ""  # how the finding is told, where its channels say it better than a robust z

    def as_dict(self) -> dict[str, float]:
        """Channel → robust z, the form signatures.match_signature takes."""
        return dict(zip(self.channels, self.z))


@dataclass(frozen=True)
class ConfigurationDifference:
    """A host whose constant channels (HugePages, MTU, queue counts…) differ from its peers': reported once, when
    the host's usual offsets are learned, as a configuration finding rather than as a deviation."""

    host: str
    window_id: int
    channels: tuple[str, ...]
    values: tuple[float, ...]
    peer_values: tuple[float, ...]
    peers: int

    def as_dict(self) -> dict[str, float]:
        """Channel → how many cluster levels apart, signed, the form signatures.match_signature takes."""
        return {c: (v - p) / max(abs(p), 1.0) * Z_CAP for c, v, p in zip(self.channels, self.values, self.peer_values)}


@dataclass(frozen=True, eq=False)
class PeerScores:
    """Robust z of every host (rows) and common channel (columns) in one window."""

    hosts: tuple[str, ...]
    names: tuple[str, ...]
    z: np.ndarray

    @property
    def host_deviation(self) -> np.ndarray:
        """Each host's largest |z| over the channels."""
        return np.abs(self.z).max(axis=1, initial=0.0)


def common_matrix(summaries: list[HostSummary]) -> tuple[tuple[str, ...], np.ndarray]:
    """The channels every host has, in the first host's order, and the hosts × channels matrix of their means."""
    if not summaries:
        return (), np.zeros((0, 0))
    first = summaries[0].names
    if all(summary.names == first for summary in summaries[1:]):  # a homogeneous cluster: no lookups needed
        return tuple(first), np.vstack([np.asarray(s.values, dtype=np.float64) for s in summaries])
    shared = set(summaries[0].names).intersection(*(s.names for s in summaries[1:]))
    names = tuple(n for n in summaries[0].names if n in shared)
    rows = []
    for summary in summaries:
        position = {name: i for i, name in enumerate(summary.names)}
        rows.append(np.asarray(summary.values, dtype=np.float64)[[position[n] for n in names]])
    return names, np.vstack(rows)


def robust_z(matrix: np.ndarray, relative_floor: float = 0.01, absolute_floor: float = 1e-9) -> np.ndarray:
    """(value − median across hosts) / (1.4826 · MAD), the spread floored at a fraction of |median|; NaN → 0.

    >>> robust_z(np.array([[512.0], [512.0], [512.0], [5120.0]])).ravel().round(1)
    array([  0.,   0.,   0., 900.])
    """
    values = np.where(np.isfinite(matrix), matrix, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a channel no host reported is all NaN, by design
        median = column_nanmedians(values)
        spread = MAD_TO_SIGMA * column_nanmedians(np.abs(values - median))
    floor = relative_floor * np.abs(np.nan_to_num(median)) + absolute_floor
    scale = np.fmax(np.nan_to_num(spread), floor)
    with np.errstate(invalid="ignore", over="ignore"):
        z = (values - median) / scale
    return capped(z, Z_CAP)


class PeerComparator:
    """Compares each window's hosts with one another and reports hosts that keep leaving their usual place.

    Ranks of one job are rarely identical: one host's input shard is larger, another sits nearer the switch. Each
    host's usual offset from the cluster on each channel (its residual from the cluster median) is learned, with its
    spread, over the windows in which the host learns its own baseline, and at least `learn_windows` compared
    windows (a job's first minutes, when ranks start at their own pace, are not its usual place); nothing is reported
    before. From then on a channel
    deviates when its residual leaves the learned one by `z_threshold` spreads and by more than `relative_floor` of
    the cluster's level and `absolute_floor` in the channel's units (a counter's few events per second are not a
    difference). A host becomes a finding when a channel has deviated for `persist_windows` consecutive windows:
    minutes, so that a job's phases, which move ranks apart for a while, are not findings. The agent's own metrics
    take no part.
    """

    def __init__(self, min_peers: int = 2, z_threshold: float = 6.0, persist_windows: int = 300, top: int = 5,
                 learn_windows: int = 120, relative_floor: float = 0.25, absolute_floor: float = 5.0 / 3.0):
        if min_peers < 1 or z_threshold <= 0 or persist_windows < 1 or top < 1 or learn_windows < 10:
            raise ValueError(f"min_peers {min_peers}, persist_windows {persist_windows} and top {top} must be ≥ 1, "
                             f"learn_windows {learn_windows} ≥ 10, z_threshold {z_threshold} > 0")
        self.min_peers = min_peers
        self.z_threshold = z_threshold
        self.persist_windows = persist_windows
        self.top = top
        self.learn_windows = learn_windows
        self.relative_floor = relative_floor
        self.absolute_floor = absolute_floor
        self._streaks: dict[str, _Streak] = {}
        self._learning: dict[str, _Learning] = {}
        self._offsets: dict[str, _Offsets] = {}
        self._configuration: list[ConfigurationDifference] = []
        self._settings_told: dict[str, dict[str, float]] = {}

    def take_configuration(self) -> list[ConfigurationDifference]:
        """Configuration differences found since the last call (each host's once, after its first `learn_windows`)."""
        found, self._configuration = self._configuration, []
        return found

    def scores(self, summaries: list[HostSummary]) -> PeerScores:
        """Robust z of every host and common channel, without touching the persistence state."""
        hosts = tuple(s.host for s in summaries)
        if len(set(hosts)) != len(hosts):
            raise ValueError(f"a window lists a host twice: {sorted(h for h in set(hosts) if hosts.count(h) > 1)}")
        names, matrix = common_matrix(summaries)
        return PeerScores(hosts, names, robust_z(matrix))

    def compare(self, window_id: int, summaries: list[HostSummary]) -> list[PeerDeviation]:
        """Findings for this window: hosts with channels off their learned offset now and in the
        `persist_windows` − 1 windows before."""
        if len(summaries) < self.min_peers + 1:
            return []
        hosts = tuple(s.host for s in summaries)
        if len(set(hosts)) != len(hosts):
            raise ValueError(f"a window lists a host twice: {sorted(h for h in set(hosts) if hosts.count(h) > 1)}")
        names, matrix = common_matrix(summaries)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            level = column_nanmedians(np.where(np.isfinite(matrix), matrix, np.nan))
        self._report_settings(window_id, summaries, names, matrix, _static_columns(summaries[0], names))
        findings = []
        for row, host in enumerate(hosts):
            z = self._deviation(summaries[row], names, matrix[row], level, len(hosts) - 1)
            if z is None:
                continue
            streak = self._advance(host, window_id, names, np.abs(z) >= self.z_threshold)
            if (streak >= self.persist_windows).any():
                findings.append(self._finding(host, names, z, window_id, streak, len(hosts) - 1))
        return findings

    def _deviation(self, summary: HostSummary, names: tuple[str, ...], values: np.ndarray, level: np.ndarray,
                   peers: int):
        """The host's residual against its learned offset, in learned spreads (None while it is learned)."""
        host = summary.host
        residual = values - level
        offsets = self._offsets.get(host)
        if offsets is None or offsets.names != names:
            learning = self._learning.get(host)
            if offsets is not None or learning is None or learning.names != names:
                learning = self._learning[host] = _Learning(names)
            self._offsets.pop(host, None)
            learning.add(residual, values)
            if learning.seen == self.learn_windows:
                self._report_configuration(host, summary.window_id, _Offsets.learn(names, learning.residuals()),
                                           learning.held_still(), level, peers, _static_columns(summary, names))
            if summary.learning or learning.seen < self.learn_windows:
                return None
            self._offsets[host] = _Offsets.learn(names, learning.residuals())
            del self._learning[host]
            return None
        floor = np.fmax(self.relative_floor * np.abs(np.nan_to_num(level)), self.absolute_floor)
        scale = np.fmax(offsets.spread, floor / self.z_threshold)
        with np.errstate(invalid="ignore"):
            z = (residual - offsets.offset) / scale
        return np.where(offsets.own, 0.0, np.nan_to_num(z, nan=0.0, posinf=0.0, neginf=0.0))

    def _report_settings(self, window_id: int, summaries: list[HostSummary], names: tuple[str, ...],
                         matrix: np.ndarray, settings: np.ndarray) -> None:
        """Settings (static channels) a host holds unlike its peers, at least half of whom share one value: any
        difference counts, from the first window compared, each host's once per value, the furthest apart (relative
        to the peers' value) first and, among equals, the one the host has on (its congestion control, not the
        peers')."""
        columns = np.flatnonzero(settings)
        for row, summary in enumerate(summaries):
            peers = np.delete(matrix[:, columns], row, axis=0)
            shared = np.median(peers, axis=0)
            agreeing = (peers == shared).sum(axis=0) * 2 >= len(peers)
            mine = matrix[row, columns]
            differs = agreeing & np.isfinite(mine) & np.isfinite(shared) & (mine != shared)
            told = self._settings_told.setdefault(summary.host, {})
            new = sorted((k for k in np.flatnonzero(differs) if told.get(names[columns[k]]) != mine[k]),
                         key=lambda k: (-abs(mine[k] - shared[k]) / max(abs(shared[k]), 1.0), -mine[k]))
            if new:
                told.update({names[columns[k]]: mine[k] for k in new})
                self._configuration.append(ConfigurationDifference(
                    summary.host, window_id, tuple(names[columns[k]] for k in new), tuple(float(mine[k]) for k in new),
                    tuple(float(shared[k]) for k in new), len(summaries) - 1))

    def _report_configuration(self, host: str, window_id: int, offsets: _Offsets, still: np.ndarray,
                              level: np.ndarray, peers: int, settings: np.ndarray) -> None:
        """Channels that never moved on the host over the learning span and sit apart from the cluster's level. A
        level that steps now and then (a cgroup's page cache growing by a page) is usage, not configuration, even
        when its distance from the cluster holds still most of the time."""
        floor = np.fmax(self.relative_floor * np.abs(np.nan_to_num(level)), self.absolute_floor)
        apart = still & (offsets.spread == 0) & (np.abs(offsets.offset) >= floor)
        apart &= ~offsets.own & ~settings
        if apart.any():
            index = np.flatnonzero(apart)[np.argsort(-np.abs(offsets.offset[apart]), kind="stable")][:self.top]
            self._configuration.append(ConfigurationDifference(
                host, window_id, tuple(offsets.names[i] for i in index),
                tuple(float(level[i] + offsets.offset[i]) for i in index), tuple(float(level[i]) for i in index),
                peers))

    def _advance(self, host: str, window_id: int, names: tuple[str, ...], deviating: np.ndarray) -> np.ndarray:
        """Each channel's run of consecutive deviating windows on the host, this one included."""
        previous = self._streaks.get(host)
        carried = np.zeros(len(names), dtype=np.int64)
        if previous is not None and previous.window_id == window_id - 1:
            carried = previous.streak if previous.names == names else previous.realigned(names)
        streak = np.where(deviating, carried + 1, 0)
        self._streaks[host] = _Streak(window_id, names, streak)
        return streak

    def _finding(self, host: str, names: tuple[str, ...], z: np.ndarray, window_id: int, streak: np.ndarray,
                 peers: int) -> PeerDeviation:
        magnitude = np.where(streak >= self.persist_windows, np.abs(z), -1.0)
        order = np.argsort(-magnitude, kind="stable")[:self.top]
        order = order[magnitude[order] >= 0]
        return PeerDeviation(host, window_id, tuple(names[i] for i in order), tuple(float(z[i]) for i in order),
                             int(streak[order].max()), peers)


def _static_columns(summary: HostSummary, names: tuple[str, ...]) -> np.ndarray:
    """Which of `names` are settings (static channels) by the summary's kinds; none where it does not say them."""
    return _static_of(summary.names, summary.kinds, names) if summary.kinds else np.zeros(len(names), dtype=bool)


@lru_cache(maxsize=64)
def _static_of(names: tuple[str, ...], kinds: tuple[str, ...], wanted: tuple[str, ...]) -> np.ndarray:
    kind_of = dict(zip(names, kinds))
    return np.array([kind_of.get(name) == "static" for name in wanted], dtype=bool)


class _Learning:
    """One host's residuals while its offsets are learned, thinned evenly to at most LEARNING_KEPT windows: every
    `stride`-th window is kept (in float16, half_precision.py), and the stride doubles (every other kept row dropped)
    when the rows fill up. The lowest and highest of its own values are kept over every window, thinned or not."""

    def __init__(self, names: tuple[str, ...]):
        self.names = names
        self.seen = 0
        self.stride = 1
        self._rows = Float16Rows(LEARNING_KEPT)
        self._lowest = np.full(len(names), np.inf)
        self._highest = np.full(len(names), -np.inf)

    def add(self, residual: np.ndarray, values: np.ndarray) -> None:
        finite = np.isfinite(values)
        np.fmin(self._lowest, np.where(finite, values, np.inf), out=self._lowest)
        np.fmax(self._highest, np.where(finite, values, -np.inf), out=self._highest)
        if self.seen % self.stride == 0:
            self._rows.append(residual)
            if len(self._rows) >= LEARNING_KEPT:
                self._rows.thin()
                self.stride *= 2
        self.seen += 1

    def residuals(self) -> np.ndarray:
        return self._rows.windows()

    def held_still(self) -> np.ndarray:
        """Channels whose own value never changed over the windows seen (and was seen at all)."""
        return self._highest == self._lowest


@dataclass(frozen=True, eq=False)
class _Offsets:
    """One host's usual residual from the cluster median per channel, its robust spread, and which channels are the
    agent's own (never compared)."""

    names: tuple[str, ...]
    offset: np.ndarray
    spread: np.ndarray
    own: np.ndarray

    @classmethod
    def learn(cls, names: tuple[str, ...], residuals: np.ndarray) -> _Offsets:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            offset = np.nan_to_num(column_nanmedians(residuals))
            spread = MAD_TO_SIGMA * np.nan_to_num(column_nanmedians(np.abs(residuals - offset)))
        return cls(names, offset, spread, np.array([name.startswith(AGENT_PREFIX) for name in names], dtype=bool))


@dataclass(frozen=True, eq=False)
class _Streak:
    """One host's per-channel deviation runs as of its last compared window."""

    window_id: int
    names: tuple[str, ...]
    streak: np.ndarray

    def realigned(self, names: tuple[str, ...]) -> np.ndarray:
        """The runs for another channel order; channels new to the host start from zero."""
        position = {name: i for i, name in enumerate(self.names)}
        return np.array([self.streak[position[n]] if n in position else 0 for n in names], dtype=np.int64)
