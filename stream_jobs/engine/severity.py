"""Severity on one scale an operator can read, the same on the console, the live page, alerts and tables: how many
times its allowed distance a finding lies outside its band, as 1 at the band's edge and one more per doubling, at
most 10, with a word (minor, major, critical). A channel a million band widths out is as critical as one 512 out;
what sets them apart is in the claim."""

from __future__ import annotations

import math

MAJOR_AT = 4.0  # 8 times the allowed distance
CRITICAL_AT = 7.0  # 64 times the allowed distance
HIGHEST = 10.0


def severity_scale(departure: float) -> float:
    """1 + log2(departure), between 1 and 10 (0 for no departure): 1× → 1, 2× → 2, 8× → 4, 64× → 7, 512× → 10.

    >>> [severity_scale(d) for d in (0.0, 1.0, 2.0, 8.0, 64.0, 1e9)]
    [0.0, 1.0, 2.0, 4.0, 7.0, 10.0]
    """
    if not math.isfinite(departure):
        return HIGHEST if departure > 0 else 0.0
    if departure <= 0:
        return 0.0
    return round(min(HIGHEST, max(1.0, 1.0 + math.log2(departure))), 2)


def severity_word(severity: float) -> str:
    """'minor' below MAJOR_AT, 'major' below CRITICAL_AT, else 'critical'."""
    return "critical" if severity >= CRITICAL_AT else "major" if severity >= MAJOR_AT else "minor"
