"""Whether the windows a baseline was learned from hold a stretch in which the host was far from the rest of them: a
fault under way, or begun, while the host was learned is part of its normal from then on, and the operator is told.

A channel's window mean lies apart when it is more than APART_SPREADS robust spreads (1.4826 · the median absolute
deviation) from the channel's median over the learning, and beyond the channel's floor in its own units; a stretch
counts once it has lasted as long as a departure must to count without confirmation (the channel watch's
`unconfirmed_s`): a start-up's few seconds are not one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stream_jobs.engine.column_stats import MAD_TO_SIGMA, column_nanmedians

APART_SPREADS = 5.0


@dataclass(frozen=True)
class StretchApart:
    """The longest stretch of learned windows in which one channel lay apart from the rest of the learning."""

    channel: str
    first_window: int
    windows: int
    typical: float
    level: float

    def told(self, stride_s: float) -> str:
        """The console's words: which channel, how long and from when in the learning, at what level against what."""
        return (f"the baseline may hold an anomaly: {self.channel} was {self.level:.4g} for "
                f"{self.windows * stride_s:g} s from {self.first_window * stride_s:g} s into the learning, against "
                f"{self.typical:.4g} over the rest of it; whatever it was is now part of this host's normal")


def stretch_apart(means: np.ndarray, floors: np.ndarray, names: tuple[str, ...],
                  min_windows: int) -> StretchApart | None:
    """The longest stretch of at least `min_windows` learned windows (rows of `means`, windows × channels) in which
    a channel lay apart, or None; a channel with an infinite floor (the agent's own) never lies apart."""
    means = np.asarray(means, dtype=np.float64)
    if len(means) < 2 * min_windows:
        return None
    median = column_nanmedians(means)
    spread = MAD_TO_SIGMA * column_nanmedians(np.abs(means - median))
    allowed = np.fmax(APART_SPREADS * np.nan_to_num(spread), floors)
    with np.errstate(invalid="ignore"):
        apart = (np.abs(means - median) > allowed) & (allowed > 0)
    runs = [_longest_run(apart[:, column]) for column in range(means.shape[1])]
    column = max(range(len(runs)), key=lambda c: runs[c][1], default=None)
    if column is None or runs[column][1] < min_windows:
        return None
    first, length = runs[column]
    inside = np.zeros(len(means), dtype=bool)
    inside[first:first + length] = True
    return StretchApart(names[column], first, length, float(np.nanmedian(means[~inside, column])),
                        float(np.nanmedian(means[inside, column])))


def _longest_run(flags: np.ndarray) -> tuple[int, int]:
    """(start, length) of the longest run of True in a boolean series; (0, 0) when there is none."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], flags.astype(np.int8), [0]])))
    if not len(edges):
        return 0, 0
    starts, ends = edges[::2], edges[1::2]
    longest = int(np.argmax(ends - starts))
    return int(starts[longest]), int(ends[longest] - starts[longest])
