"""Metric selection (paper §4.1): prune channels that a kept representative already explains on the baseline.

Channels whose baseline correlation exceeds |r| > threshold form a cluster, and one representative per cluster is
kept. Representatives are chosen greedily in rank order: first a fixed priority table that favours interpretable
utilisation and throughput channels, then the paper's tie-break, "retain more informative metrics with higher
correlation variance", then catalog order. Clusters never cross subsystems, so every subsystem in the catalog stays
represented and attribution (§4.4) keeps naming the subsystem where a signal comes from. The union of several
workloads' selections is the diagnostic space (a channel is kept if any workload kept it).
"""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

# (regex on the channel name, rank): lower ranks win a cluster; a name takes the lowest rank of the patterns it matches.
DEFAULT_PRIORITY: tuple[tuple[str, int], ...] = (
    (r"^cpu\.(busy_pct|busy|utilization|util)\.", 0),
    (r"^gpu\.utilization\.", 1),
    (r"^mem\.(MemAvailable|MemFree|MemUsed|used|usage|utilization)(\.|$)", 2),
    (r"^gpu\.memory_(used|utilization)\.", 2),
    (r"^net\.(rx|tx)_bytes\.", 3),
    (r"^ib\.port_(rcv|xmit)_data\.", 3),
    (r"^disk\.(sectors_read|sectors_written|time_reading_ms|time_writing_ms|time_in_progress_ms)\.", 4),
    (r"^cpu\.(user|system|iowait|softirq|busy_mhz|freq_mhz)\.", 5),
    (r"^gpu\.(power|clock_sm|temperature)\.", 5),
    (r"(^|\.)ipc(\.|$)", 5),
)

# Rank of a channel that no priority pattern matches.
UNRANKED = 1_000

# Fewer finite baseline samples than this and a correlation means nothing; the channel is kept unpruned.
MIN_SAMPLES = 3


@dataclass(frozen=True)
class Selection:
    """Which channels to keep, and which kept channel stands for each dropped one."""

    kept: tuple[str, ...]
    represented_by: dict[str, str] = field(default_factory=dict)
    constant: tuple[str, ...] = ()
    threshold: float = 0.5

    def savings(self) -> float:
        """Fraction of the selection's channels that are dropped."""
        total = len(self.kept) + len(self.represented_by)
        return len(self.represented_by) / total if total else 0.0

    def union(self, *others: Selection) -> Selection:
        """The selection that keeps every channel some selection kept (the paper's merge across workloads)."""
        selections = (self, *others)
        if len({s.threshold for s in selections}) > 1:
            raise ValueError(f"selections use thresholds {sorted({s.threshold for s in selections})}; one expected")
        kept = tuple(dict.fromkeys(name for s in selections for name in s.kept))
        kept_set = set(kept)
        dropped: dict[str, str] = {}
        for s in selections:
            for name, representative in s.represented_by.items():
                if name not in kept_set:
                    dropped.setdefault(name, representative)
        return Selection(kept, dropped, _constant_everywhere(selections), self.threshold)

    def mask(self, names) -> np.ndarray:
        """True for each catalog channel to keep; channels the selection never saw are kept (new hardware)."""
        return ~np.isin(np.asarray(list(names), dtype=object), list(self.represented_by))

    def to_json(self) -> str:
        return json.dumps({"threshold": self.threshold, "kept": list(self.kept),
                           "represented_by": self.represented_by, "constant": list(self.constant)}, indent=1)

    @classmethod
    def from_json(cls, text: str) -> Selection:
        data = json.loads(text)
        return cls(tuple(data["kept"]), dict(data["represented_by"]), tuple(data["constant"]),
                   float(data["threshold"]))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Selection:
        return cls.from_json(Path(path).read_text(encoding="utf-8"))


def _constant_everywhere(selections: tuple[Selection, ...]) -> tuple[str, ...]:
    """Channels constant in every selection that saw them."""
    varying = {name for s in selections for name in (*s.kept, *s.represented_by) if name not in s.constant}
    return tuple(name for name in dict.fromkeys(n for s in selections for n in s.constant) if name not in varying)


def select_channels(signal: np.ndarray, names, subsystems, threshold: float = 0.5,
                    priority: tuple[tuple[str, int], ...] = DEFAULT_PRIORITY) -> Selection:
    """Prune a baseline's per-step signals (n samples, c channels) to one representative per correlated cluster.

    >>> t = np.linspace(0, 6, 50)
    >>> signal = np.column_stack([np.sin(t), 2 * np.sin(t) + 1, np.cos(t)])
    >>> select_channels(signal, ["pmu.cycles.cpu0", "cpu.busy.cpu0", "cpu.iowait.cpu0"], ["cpu"] * 3).kept
    ('cpu.busy.cpu0', 'cpu.iowait.cpu0')
    """
    names, subsystems = tuple(names), tuple(subsystems)
    signal = np.asarray(signal, dtype=np.float64)
    _check_inputs(signal, names, subsystems, threshold)
    finite = np.isfinite(signal)
    constant = _constant_columns(signal, finite)
    scored = (finite.sum(axis=0) >= MIN_SAMPLES) & ~constant
    correlation = _correlation(signal[:, scored], finite[:, scored])
    strength = np.abs(correlation)
    scored_names = [n for n, s in zip(names, scored) if s]
    order = _rank_order(scored_names, strength, priority)
    _, subsystem_codes = np.unique(np.asarray(subsystems, dtype=object)[scored], return_inverse=True)
    representative = _greedy_clusters(strength, order, subsystem_codes, threshold)
    represented_by = {scored_names[i]: scored_names[r] for i, r in enumerate(representative) if r != i}
    kept = tuple(n for n in names if n not in represented_by)
    return Selection(kept, represented_by, tuple(n for n, c in zip(names, constant) if c), float(threshold))


def _check_inputs(signal: np.ndarray, names: tuple, subsystems: tuple, threshold: float) -> None:
    if signal.ndim != 2 or signal.shape[1] != len(names) or len(names) != len(subsystems):
        raise ValueError(f"signal of shape {signal.shape} needs one name and one subsystem per column "
                         f"({len(names)} names, {len(subsystems)} subsystems)")
    if len(set(names)) != len(names):
        raise ValueError("channel names must be unique")
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold is {threshold}; expected 0 < |r| threshold ≤ 1")


def _constant_columns(signal: np.ndarray, finite: np.ndarray) -> np.ndarray:
    """True where every finite sample of a channel (at least one) has the same value."""
    high = np.where(finite, signal, -np.inf).max(axis=0, initial=-np.inf)
    low = np.where(finite, signal, np.inf).min(axis=0, initial=np.inf)
    return finite.any(axis=0) & (high == low)


def _correlation(signal: np.ndarray, finite: np.ndarray) -> np.ndarray:
    """Pearson correlation of the columns; a missing sample takes its channel's mean.

    Mean-filling pulls a gappy channel's correlations towards zero, so gaps make pruning more conservative, never less.
    """
    if signal.shape[1] == 0:
        return np.zeros((0, 0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        filled = np.where(finite, signal, np.nanmean(np.where(finite, signal, np.nan), axis=0))
        correlation = np.atleast_2d(np.corrcoef(filled, rowvar=False))
    return np.where(np.isnan(correlation), 0.0, correlation)  # corrcoef clips to ±1, so NaN is all to replace


def _rank_order(names: list[str], strength: np.ndarray, priority) -> np.ndarray:
    """Indices of the scored channels, best representative first."""
    ranks = priority_ranks(names, priority)
    return np.lexsort((np.arange(len(names)), -_correlation_variance(strength), ranks))


def priority_ranks(names, priority: tuple[tuple[str, int], ...] = DEFAULT_PRIORITY) -> np.ndarray:
    """Each name's lowest matching priority rank, UNRANKED where no pattern matches."""
    return np.array([_priority_rank(name, priority) for name in names], dtype=np.int64)


@lru_cache(maxsize=1 << 16)
def _priority_rank(name: str, priority: tuple[tuple[str, int], ...]) -> int:
    """One name's rank, kept: hosts of one kind share their names, and every fit ranks all of a host's channels."""
    return min((rank for pattern, rank in priority if re.search(pattern, name)), default=UNRANKED)


def _correlation_variance(strength: np.ndarray) -> np.ndarray:
    """Variance of each channel's |r| with every other channel, to 9 decimals: channels that tie (two channels, each
    with one other) must tie on every platform, not by the last bit of a sum, so the channel order decides."""
    others = len(strength) - 1
    if others < 1:
        return np.zeros(len(strength))
    own = np.diagonal(strength)
    mean = (strength.sum(axis=1) - own) / others
    return np.round(np.maximum(((strength ** 2).sum(axis=1) - own ** 2) / others - mean ** 2, 0.0), 9)


def _greedy_clusters(strength: np.ndarray, order: np.ndarray, subsystem_codes: np.ndarray,
                     threshold: float) -> np.ndarray:
    """For each channel, the index of its representative (itself when it is one)."""
    representative = np.full(len(strength), -1, dtype=np.int64)
    for index in order:
        if representative[index] >= 0:
            continue
        members = (representative < 0) & (strength[index] > threshold) & (subsystem_codes == subsystem_codes[index])
        representative[members] = index
        representative[index] = index
    return representative
