"""How well any threshold on a window statistic can do on labelled field data: the ceiling a per-window detector of
the engine's family (each channel's window mean and spread against its baseline, the largest departure over
channels, one threshold) reaches when the threshold is chosen knowing the labels, scored as `../shared/bench/run.py`
scores (event recall, window precision, composite F1, never point-adjusted).

A detector calibrated without the labels cannot do better than its family's best threshold, so this bounds what
tuning the limit can buy and tells a target the data cannot meet from one the engine misses."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

BASELINE_QUANTILES = (0.95, 0.98, 0.99, 0.995, 0.998, 0.999, 0.9995)


@dataclass(frozen=True)
class Case:
    """One labelled case: baseline and judged samples (rows × metrics), the judged times, the labelled intervals."""

    name: str
    baseline: np.ndarray
    judged: np.ndarray
    seconds: np.ndarray
    labels: list[dict]


def load_cases(folder: Path) -> list[Case]:
    """The cases of a field-data folder laid out as run.py reads it (cases.json; per case baseline.csv, test.csv
    with a timestamp column first, labels.json)."""
    cases = []
    for name in json.loads((folder / "cases.json").read_text()):
        baseline = pd.read_csv(folder / name / "baseline.csv")
        judged = pd.read_csv(folder / name / "test.csv")
        cases.append(Case(name, baseline.iloc[:, 1:].to_numpy(float), judged.iloc[:, 1:].to_numpy(float),
                          judged.iloc[:, 0].to_numpy(float), json.loads((folder / name / "labels.json").read_text())))
    return cases


def window_statistics(samples: np.ndarray, rows: int) -> np.ndarray:
    """Every window's mean and spread per metric, windows × (2 · metrics), one window per row start."""
    windows = np.lib.stride_tricks.sliding_window_view(samples, rows, axis=0)
    return np.concatenate([windows.mean(axis=2), windows.std(axis=2)], axis=1)


def largest_departure(baseline: np.ndarray, judged: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The largest |z| over columns per window, for the baseline's windows and the judged ones (z against the
    baseline's mean and standard deviation of each column)."""
    centre, spread = baseline.mean(axis=0), baseline.std(axis=0)
    spread = np.where(spread > 0, spread, np.inf)
    return np.abs((baseline - centre) / spread).max(axis=1), np.abs((judged - centre) / spread).max(axis=1)


def tally(flags: np.ndarray, starts: np.ndarray, window_s: float, labels: list[dict]) -> np.ndarray:
    """Events, events found, flagged windows and true flagged windows, as run.py counts them."""
    ends = starts + window_s
    inside = np.zeros(len(flags), dtype=bool)
    found = 0
    runs = _runs(flags)
    for label in labels:
        overlapping = (starts < label["end"]) & (ends > label["start"])
        inside |= overlapping
        found += any(overlapping[a:b].any() for a, b in runs)
    return np.array([len(labels), found, flags.sum(), (flags & inside).sum()], dtype=np.float64)


def _runs(flags: np.ndarray) -> list[tuple[int, int]]:
    edges = np.diff(np.concatenate([[0], flags.astype(np.int8), [0]]))
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)))


def ceiling(cases: list[Case], window_s: float, quantiles=BASELINE_QUANTILES) -> list[dict]:
    """Pooled recall, precision and composite F1 at each threshold, the threshold being each case's baseline
    quantile of the largest departure (one row per quantile)."""
    pooled = np.zeros((len(quantiles), 4))
    for case in cases:
        step = float(np.median(np.diff(case.seconds)))
        rows = max(2, int(round(window_s / step)))
        base, judged = largest_departure(window_statistics(case.baseline, rows),
                                         window_statistics(case.judged, rows))
        starts = case.seconds[:len(judged)]
        for index, quantile in enumerate(quantiles):
            pooled[index] += tally(judged > np.quantile(base, quantile), starts, rows * step, case.labels)
    figures = []
    for quantile, (events, found, flagged, true) in zip(quantiles, pooled):
        recall, precision = found / events, (true / flagged if flagged else 0.0)
        f1 = 2 * recall * precision / (recall + precision) if recall + precision else 0.0
        figures.append({"baseline_quantile": quantile, "event_recall": round(recall, 3),
                        "window_precision": round(precision, 3), "composite_f1": round(f1, 3)})
    return figures


def out_of_reach(cases: list[Case], window_s: float, quantile: float = 0.99) -> list[dict]:
    """Per case, at one baseline quantile: the labelled events none of whose windows exceeds it (no threshold that
    flags fewer clean windows finds them) and the share of clean judged windows that do."""
    rows = []
    for case in cases:
        step = float(np.median(np.diff(case.seconds)))
        width = max(2, int(round(window_s / step)))
        base, judged = largest_departure(window_statistics(case.baseline, width),
                                         window_statistics(case.judged, width))
        limit = np.quantile(base, quantile)
        starts = case.seconds[:len(judged)]
        labelled = np.zeros(len(judged), dtype=bool)
        unreached = 0
        for label in case.labels:
            overlapping = (starts < label["end"]) & (starts + width * step > label["start"])
            labelled |= overlapping
            unreached += not (judged[overlapping] > limit).any()
        clean = judged[~labelled]
        rows.append({"case": case.name, "events": len(case.labels), "events_never_above": unreached,
                     "clean_windows_above": round(float((clean > limit).mean()) if clean.size else 0.0, 3)})
    return rows

