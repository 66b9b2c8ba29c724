"""Where a text file's values and labels sit among its whitespace tokens, so a re-read picks values by position."""

from __future__ import annotations

import math
import operator
from typing import Callable


class TokenLayout:
    """The positions of values and labels among a file's whitespace tokens, for re-reading without re-parsing."""

    def __init__(self, names: tuple[str, ...], token_count: int, value_positions: list[int],
                 label_positions: list[int], labels: tuple[bytes, ...], scales: list[float] | None, base: int):
        self.names, self.token_count, self.labels, self.scales, self.base = names, token_count, labels, scales, base
        self.value_positions, self.label_positions = value_positions, label_positions
        self._values = _getter(value_positions)
        self._labels = _getter(label_positions)
        self._count = len(value_positions)

    def matches(self, tokens: list[bytes]) -> bool:
        return len(tokens) == self.token_count and self._labels(tokens) == self.labels

    def values(self, tokens: list[bytes]) -> list[float]:
        """The values at the layout's positions; ValueError if one of them is not a number."""
        convert = float if self.base == 10 else (lambda token: float(int(token, self.base)))
        values = list(map(convert, self._values(tokens)))
        if self.scales is not None:
            values = list(map(operator.mul, values, self.scales))
        return finite_or_nan(values)


def finite_or_nan(values: list[float]) -> list[float]:
    """'inf' in a kernel file is text, not a measurement: it reads as NaN like any unreadable value."""
    if math.inf in values or -math.inf in values:
        return [math.nan if math.isinf(v) else v for v in values]
    return values


def _getter(positions: list[int]) -> Callable[[list[bytes]], tuple]:
    """itemgetter that always returns a tuple, even for zero or one position."""
    if len(positions) == 1:
        only = positions[0]
        return lambda tokens: (tokens[only],)
    if not positions:
        return lambda tokens: ()
    return operator.itemgetter(*positions)
