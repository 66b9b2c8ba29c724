"""A quantile of the scores a detector gave lately: the threshold that lets a host's normal move, at a bounded
speed, while a fault is judged against the past it left.

The last `span` scores count (flagged ones too), so with a week's span a change that lifts every score above the
old 99th percentile is judged for 1 % of a week (1.7 hours) before it is the norm, and a host whose level moved for
good is never locked into flagging. The span is kept as `blocks` histograms of consecutive scores, the oldest
dropped whole, in memory that does not grow with the span. Bins are measured from an anchor (the baseline's median
score; scores below it only count) in units of `scale` (the baseline's interquartile range): a bin is
`resolution` of a unit wide near the anchor and `resolution` of the distance from it further out, so a score whose
range is narrow (an Isolation Forest's) is read as finely as one that spans decades.
"""

from __future__ import annotations

import math

import numpy as np

# Scores are binned up to this many scales from the anchor; further ones fall in the last bin, and a quantile that
# lands there is unbounded: a detector whose recent scores lie that far out has no threshold left to judge by.
SCALES_BINNED = 1e6


class TrailingQuantile:
    """The `quantile` of the last `span` scores (in `blocks` steps), read in bins from `anchor` in units of `scale`
    (below the anchor, `value` is the anchor; beyond the last bin, infinite)."""

    def __init__(self, span: float, quantile: float = 0.99, anchor: float = 0.0, scale: float = 1.0,
                 resolution: float = 0.01, blocks: int = 4):
        if not span >= 1 or not 0 < quantile < 1 or not scale > 0 or not 0 < resolution < 1 or blocks < 1:
            raise ValueError(f"span {span} must be ≥ 1, quantile {quantile} and resolution {resolution} in (0, 1), "
                             f"scale {scale} > 0, blocks {blocks} ≥ 1")
        self.span, self.quantile, self.resolution = float(span), float(quantile), float(resolution)
        self.anchor, self.scale = float(anchor), float(scale)
        self.block_size = max(1, math.ceil(span / blocks))
        self._per_step = 1.0 / math.log1p(resolution)
        bins = int(math.ceil(math.log1p(SCALES_BINNED / resolution) * self._per_step)) + 2  # [0]: below the anchor
        self.counts = np.zeros((blocks + 1, bins), dtype=np.int32)  # the filling block, then the full ones
        self.total = np.zeros(bins, dtype=np.int64)
        self._newest, self._in_newest = 0, 0
        self._count, self._index, self._through_index = 0, 0, 0  # counted; the quantile's bin; counted up to it
        self.value = self.anchor

    def _bin(self, score: float) -> int:
        if not score > self.anchor:
            return 0
        units = (score - self.anchor) / self.scale / self.resolution
        return min(self.counts.shape[1] - 1, 1 + int(math.log1p(units) * self._per_step))

    def _lower_edge(self, index: int) -> float:
        return self.anchor + self.scale * self.resolution * math.expm1((index - 1) / self._per_step)

    def add(self, score: float) -> float:
        """Count one score (NaN is skipped); returns the quantile with it counted."""
        if math.isnan(score):
            return self.value
        if self._in_newest == self.block_size:
            self._drop_oldest()
        where = self._bin(score)
        self.counts[self._newest, where] += 1
        self.total[where] += 1
        self._in_newest += 1
        self._count += 1
        self._through_index += where <= self._index
        self.value = self._settle()
        return self.value

    def _drop_oldest(self) -> None:
        """Start a new block in place of the oldest."""
        self._newest = (self._newest + 1) % len(self.counts)
        dropped = self.counts[self._newest]
        self.total -= dropped
        self._count -= int(dropped.sum())
        self._through_index -= int(dropped[:self._index + 1].sum())
        self.counts[self._newest] = 0
        self._in_newest = 0

    def extend(self, scores: np.ndarray) -> float:
        """Count scores in order (a baseline's, as if they came just before what is judged)."""
        for score in np.asarray(scores, dtype=np.float64).ravel().tolist():
            self.add(score)
        return self.value

    def _settle(self) -> float:
        """Move the quantile's bin to the first whose running count passes `quantile` of all counted (a step or
        two after one score), and read its lower edge."""
        if self._count == 0:
            return self.anchor
        wanted, total = self.quantile * self._count, self.total
        while self._index > 0 and self._through_index - total[self._index] > wanted:
            self._through_index -= int(total[self._index])
            self._index -= 1
        while self._through_index <= wanted:
            self._index += 1
            self._through_index += int(total[self._index])
        return self._edge(self._index)

    def _edge(self, index: int) -> float:
        if index >= self.counts.shape[1] - 1:
            return math.inf
        return self.anchor if index == 0 else self._lower_edge(index)

    def state(self) -> dict:
        used = np.flatnonzero(self.counts.any(axis=0))
        return {"span": self.span, "quantile": self.quantile, "anchor": self.anchor, "scale": self.scale,
                "resolution": self.resolution,
                "blocks": len(self.counts) - 1, "bins": used.tolist(), "counts": self.counts[:, used].tolist(),
                "newest": self._newest, "in_newest": self._in_newest}

    @classmethod
    def from_state(cls, state: dict) -> TrailingQuantile:
        trailing = cls(state["span"], state["quantile"], state["anchor"], state["scale"], state["resolution"],
                       state["blocks"])
        used = np.asarray(state["bins"], dtype=np.int64)
        trailing.counts[:, used] = np.asarray(state["counts"], dtype=np.int32).reshape(len(trailing.counts), -1)
        trailing.total = trailing.counts.sum(axis=0, dtype=np.int64)
        trailing._newest, trailing._in_newest = int(state["newest"]), int(state["in_newest"])
        trailing._count = int(trailing.total.sum())
        trailing._through_index = int(trailing.total[0])
        trailing.value = trailing._settle()
        return trailing
