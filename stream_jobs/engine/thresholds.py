"""Alert thresholds drawn from the baseline's own score distribution, so a clean run raises (almost) nothing."""

from __future__ import annotations

import numpy as np


def baseline_threshold(baseline_scores: np.ndarray, quantile: float = 0.99, margin: float = 2.0) -> float:
    """The baseline's upper quantile plus `margin` times its distance from the median.

    A window must sit well beyond anything the baseline produced, not merely in its top 1 % (the paper's rule,
    which flags about 36 windows per host-hour on a clean run).
    """
    upper = float(np.quantile(baseline_scores, quantile))
    centre = float(np.median(baseline_scores))
    return upper + margin * max(upper - centre, 1e-9)
