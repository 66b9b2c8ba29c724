"""Isolation Forest (paper §4.3): windows that a few random splits isolate are rare; high score = anomalous."""

from __future__ import annotations

import warnings

import numpy as np

from stream_jobs.engine.column_stats import nanmean, nanstd
from stream_jobs.engine.detectors.state import check_state, decode_array, encode_array


class IsolationForestDetector:
    """Isolation Forest (Liu, Ting and Zhou, ICDM 2008) as scikit-learn defines it: `n_estimators` trees, each
    grown on `max_samples` windows drawn without replacement (256 or all of them, for "auto") to a depth of
    ceil(log2(max_samples)), each split on a random feature that varies in the node at a threshold drawn uniformly
    between its smallest and largest value there; score = 2^(−mean path length / c(max_samples)).

    The trees are grown here, every tree of a level at once in numpy, rather than by scikit-learn: a baseline of
    60 windows is fitted six times (five calibration folds and the final forest), and scikit-learn spends ~60 ms
    per fit on per-tree dispatch where this takes a few. Features are drawn among `FEATURE_CANDIDATES` that vary
    across the baseline; a node where none of them varies becomes a leaf. The forest is one flat node table, which
    is also the detector's JSON state: a restored baseline needs neither pickle nor a refit. Features are compared in
    float32 as distances from their baseline mean in units of their baseline spread, so a column on a large level (a
    gauge shifted by 1e6) keeps the resolution of one near 0.
    """

    name = "isolation_forest"

    def __init__(self, seed: int = 0, n_estimators: int = 100, max_samples: int | float | str = "auto"):
        self.seed = seed
        self.n_estimators = n_estimators
        self.max_samples = max_samples
        self.mean: np.ndarray | None = None
        self.unit: np.ndarray | None = None  # None: raw features (a forest of earlier versions)
        self.forest: dict[str, np.ndarray] = {}

    @property
    def fitted(self) -> bool:
        return self.mean is not None

    def fit(self, baseline: np.ndarray) -> "IsolationForestDetector":
        baseline = np.asarray(baseline, dtype=np.float64)
        if baseline.ndim != 2 or len(baseline) == 0:
            raise ValueError(f"baseline has shape {baseline.shape}; expected (windows ≥ 1, features)")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN feature is imputed with 0
            self.mean = np.nan_to_num(nanmean(baseline, axis=0))
            spread = np.nan_to_num(nanstd(baseline, axis=0))
        self.unit = np.where(spread > 0, spread, 1.0)
        samples = _sample_count(self.max_samples, len(baseline))
        self.forest = grow_forest(self._impute(baseline), self.n_estimators, samples,
                                  np.random.default_rng(self.seed))
        return self

    def score(self, windows: np.ndarray) -> np.ndarray:
        """2^(−mean path length / expected path length): near 1 for isolated windows, about 0.5 or less otherwise."""
        if self.mean is None:
            raise RuntimeError("IsolationForestDetector.score called before fit")
        total = _path_lengths(self.forest, self._impute(windows)).sum(axis=1, dtype=np.float64)
        normaliser = float(self.forest["normaliser"])
        return 2.0 ** -(total / normaliser if normaliser > 0 else np.ones_like(total))

    def _impute(self, windows: np.ndarray) -> np.ndarray:
        """Missing features at their baseline mean, in baseline units and float32 as the trees compare them."""
        windows = np.asarray(windows, dtype=np.float64)
        filled = np.where(np.isnan(windows), self.mean, windows)
        return (filled if self.unit is None else (filled - self.mean) / self.unit).astype(np.float32)

    def state(self) -> dict:
        """The fitted forest as JSON values."""
        if self.mean is None:
            raise RuntimeError("IsolationForestDetector.state called before fit")
        return {"name": self.name, "seed": self.seed, "n_estimators": self.n_estimators,
                "max_samples": self.max_samples, "mean": encode_array(self.mean),
                "unit": None if self.unit is None else encode_array(self.unit),
                "forest": {key: encode_array(value) for key, value in self.forest.items()}}

    @classmethod
    def from_state(cls, state: dict) -> "IsolationForestDetector":
        """A fitted detector equal to the one whose `state()` this is."""
        check_state(state, cls.name)
        detector = cls(state["seed"], state["n_estimators"], state["max_samples"])
        detector.mean = decode_array(state["mean"])
        detector.unit = decode_array(state["unit"]) if state.get("unit") is not None else None
        detector.forest = {key: decode_array(value).astype(FOREST_DTYPES[key])
                           for key, value in state["forest"].items()}
        return detector


FEATURE_CANDIDATES = 16  # features tried per node, first varying one taken
FOREST_DTYPES = {"feature": np.int32, "threshold": np.float32, "left": np.int32, "right": np.int32,
                 "path_length": np.float32, "roots": np.int32, "depth": np.int32, "normaliser": np.float64}


def _sample_count(max_samples: int | float | str, windows: int) -> int:
    """Windows per tree, as scikit-learn reads `max_samples`."""
    if max_samples == "auto":
        return min(256, windows)
    if isinstance(max_samples, float) and 0.0 < max_samples <= 1.0:
        return max(1, int(max_samples * windows))
    if isinstance(max_samples, int) and max_samples >= 1:
        return min(max_samples, windows)
    raise ValueError(f"max_samples is {max_samples!r}; expected 'auto', a fraction in (0, 1] or a count ≥ 1")


def grow_forest(data: np.ndarray, trees: int, samples: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """`trees` isolation trees on float32 `data` as one flat node table (a leaf points to itself and holds its path
    length). Grown level by level: the windows of every node of a level lie in one array, node after node, and
    every node is split at once."""
    limit = int(np.ceil(np.log2(max(samples, 2))))
    varying = np.flatnonzero(data.max(axis=0) > data.min(axis=0))
    table = _NodeTable()
    order = np.argsort(rng.random((trees, len(data))), axis=1)[:, :samples].ravel()
    sizes = np.full(trees, samples)
    nodes = table.add(np.zeros(trees, np.int32), sizes)
    for level in range(limit):
        splittable = sizes >= 2
        if varying.size == 0 or not splittable.any():
            break
        order, nodes, sizes = order[np.repeat(splittable, sizes)], nodes[splittable], sizes[splittable]
        segment = np.repeat(np.arange(len(nodes)), sizes)
        feature, threshold, goes_left = _random_splits(data, order, segment, sizes, varying, rng)
        split = feature >= 0
        kept = split[segment]
        order, goes_left, segment = order[kept], goes_left[kept], (np.cumsum(split) - 1)[segment[kept]]
        nodes, feature, threshold = nodes[split], feature[split], threshold[split]
        order = order[np.argsort(segment * 2 + ~goes_left, kind="stable")]  # each node's left windows, then right
        left_sizes = np.bincount(segment, weights=goes_left, minlength=len(nodes)).astype(np.int64)
        right_sizes = np.bincount(segment, minlength=len(nodes)) - left_sizes
        depth = np.full(len(nodes), level + 1, np.int32)
        left, right = table.add(depth, left_sizes), table.add(depth, right_sizes)
        table.split(nodes, feature, threshold, left, right)
        nodes = np.column_stack([left, right]).ravel()
        sizes = np.column_stack([left_sizes, right_sizes]).ravel()
    return table.finish(trees, samples)


def _random_splits(data, order, segment, sizes, varying, rng):
    """Per node: a random feature that varies among its windows (−1 when none of the candidates does) and a
    threshold drawn uniformly in [smallest, largest) of its values; per window: whether it goes left."""
    count = len(sizes)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    candidates = varying[rng.integers(0, varying.size, size=(count, FEATURE_CANDIDATES))]
    values = data[order[:, None], candidates[segment]]  # (windows of all nodes, candidates)
    low, high = np.minimum.reduceat(values, starts, axis=0), np.maximum.reduceat(values, starts, axis=0)
    varies = high > low
    first = np.argmax(varies, axis=1)
    rows = np.arange(count)
    low, high = low[rows, first], high[rows, first]
    threshold = (low + rng.random(count) * (high.astype(np.float64) - low)).astype(np.float32)
    threshold = np.where(threshold >= high, low, threshold)  # rounding must leave both sides non-empty
    feature = np.where(varies[rows, first], candidates[rows, first], -1)
    goes_left = values[np.arange(len(order)), first[segment]] <= threshold[segment]
    return feature, threshold, goes_left


class _NodeTable:
    """The forest's nodes as they are grown: sizes and depths of every node, splits of the inner ones."""

    def __init__(self):
        self.sizes: list[np.ndarray] = []
        self.depths: list[np.ndarray] = []
        self.splits: list[tuple] = []
        self.count = 0

    def add(self, depths: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        ids = np.arange(self.count, self.count + len(depths), dtype=np.int32)
        self.count += len(depths)
        self.sizes.append(sizes)
        self.depths.append(depths)
        return ids

    def split(self, nodes, feature, threshold, left, right) -> None:
        self.splits.append((nodes, feature, threshold, left, right))

    def finish(self, trees: int, samples: int) -> dict[str, np.ndarray]:
        ids = np.arange(self.count, dtype=np.int32)
        table = {"feature": np.zeros(self.count, np.int32), "threshold": np.zeros(self.count, np.float32),
                 "left": ids.copy(), "right": ids.copy()}
        for nodes, feature, threshold, left, right in self.splits:
            table["feature"][nodes], table["threshold"][nodes] = feature, threshold
            table["left"][nodes], table["right"][nodes] = left, right
        depths, sizes = np.concatenate(self.depths), np.concatenate(self.sizes)
        leaf = table["left"] == ids
        table["path_length"] = np.where(leaf, depths + _average_path_length(sizes), 0.0).astype(np.float32)
        table["roots"] = np.arange(trees, dtype=np.int32)
        table["depth"] = np.array([depths.max()], dtype=np.int32)
        table["normaliser"] = np.array(trees * float(_average_path_length(np.array([samples]))[0]))
        return table


def _path_lengths(forest: dict[str, np.ndarray], windows: np.ndarray) -> np.ndarray:
    """(windows, trees) path lengths: every window walks every tree at once, one level per step."""
    node = np.broadcast_to(forest["roots"], (windows.shape[0], forest["roots"].size))
    rows = np.arange(windows.shape[0])[:, None]
    for _ in range(int(forest["depth"][0])):
        goes_left = windows[rows, forest["feature"][node]] <= forest["threshold"][node]
        node = np.where(goes_left, forest["left"][node], forest["right"][node])
    return forest["path_length"][node]


def _average_path_length(samples: np.ndarray) -> np.ndarray:
    """Expected path length of an unsuccessful search in a binary tree of `samples` nodes (Liu et al. 2008)."""
    samples = np.asarray(samples, dtype=np.float64)
    many = np.fmax(samples, 3.0)
    general = 2.0 * (np.log(many - 1.0) + np.euler_gamma) - 2.0 * (many - 1.0) / many
    return np.where(samples <= 1, 0.0, np.where(samples == 2, 1.0, general))
