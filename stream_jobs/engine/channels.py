"""The engine's view of a host's channels: names, kinds and subsystems as aligned arrays."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

CUMULATIVE_KINDS = ("counter", "event")


@dataclass(frozen=True)
class ChannelTable:
    """Column metadata for a host's frame vectors, in frame order."""

    names: tuple[str, ...]
    kinds: tuple[str, ...]
    subsystems: tuple[str, ...]

    def __post_init__(self):
        if not len(self.names) == len(self.kinds) == len(self.subsystems):
            raise ValueError("names, kinds and subsystems must have one entry per channel")

    def __len__(self) -> int:
        return len(self.names)

    @cached_property
    def cumulative(self) -> np.ndarray:
        """True where the channel is a cumulative counter whose rate, not level, is the signal."""
        return np.isin(np.asarray(self.kinds), CUMULATIVE_KINDS)

    @cached_property
    def scored(self) -> np.ndarray:
        """True where the channel takes part in single-host scoring (static channels do not, paper §4.2)."""
        return np.asarray(self.kinds) != "static"
