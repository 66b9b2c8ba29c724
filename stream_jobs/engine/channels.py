"""The engine's view of a host's channels: names, kinds and subsystems as aligned arrays."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

CUMULATIVE_KINDS = ("counter", "event")
# The page size Linux reports memory counts in (/proc/vmstat, per-node page counts) on the platforms Reveal runs on.
PAGE_BYTES = 4096.0
SECTOR_BYTES = 512.0  # the unit of the kernel's block-device sector counts, whatever the device's own sector size
# Units of a share in percent.
PERCENT_UNITS = ("%", "percent", "pct")
# Units of time a counter of CPU, stall or idle time may be kept in, in seconds.
SECONDS_PER_TIME_UNIT = {"ns": 1e-9, "us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3, "s": 1.0, "seconds": 1.0}


@dataclass(frozen=True)
class ChannelTable:
    """Column metadata for a host's frame vectors, in frame order."""

    names: tuple[str, ...]
    kinds: tuple[str, ...]
    subsystems: tuple[str, ...]
    units: tuple[str, ...] = ()

    def __post_init__(self):
        if not len(self.names) == len(self.kinds) == len(self.subsystems):
            raise ValueError("names, kinds and subsystems must have one entry per channel")
        if self.units and len(self.units) != len(self.names):
            raise ValueError("units, when given, must have one entry per channel")

    def __len__(self) -> int:
        return len(self.names)

    @classmethod
    def of_catalog(cls, catalog) -> ChannelTable:
        """The table of a catalog's channels (anything with `names`, `kinds` and `channels` that have a subsystem
        and a unit)."""
        return cls(tuple(catalog.names), tuple(catalog.kinds), tuple(c.subsystem for c in catalog.channels),
                   tuple(c.unit for c in catalog.channels))

    @cached_property
    def cumulative(self) -> np.ndarray:
        """True where the channel is a cumulative counter whose rate, not level, is the signal."""
        return np.isin(np.asarray(self.kinds), CUMULATIVE_KINDS)

    @cached_property
    def bytes_per_unit(self) -> np.ndarray:
        """For levels of memory (gauges in bytes or in pages of PAGE_BYTES), the bytes one unit of the channel is;
        0 for every other channel."""
        if not self.units:
            return np.zeros(len(self.names))
        units, gauges = np.asarray(self.units), np.asarray(self.kinds) == "gauge"
        return np.where(gauges & (units == "bytes"), 1.0, np.where(gauges & (units == "pages"), PAGE_BYTES, 0.0))

    @cached_property
    def percent(self) -> np.ndarray:
        """True for gauges that are a share in percent (of time stalled, of a device busy)."""
        if not self.units:
            return np.zeros(len(self.names), dtype=bool)
        return (np.asarray(self.kinds) == "gauge") & np.isin(np.asarray(self.units), PERCENT_UNITS)

    @cached_property
    def traffic_unit(self) -> np.ndarray:
        """For counters of traffic, their unit ('bytes' or 'packets'); '' for every other channel. A block device's
        sectors moved are bytes in units of SECTOR_BYTES (see traffic_bytes_per_unit)."""
        if not self.units:
            return np.full(len(self.names), "", dtype=object)
        units = np.asarray(self.units, dtype=object)
        units = np.where(units == "sectors", "bytes", units)
        return np.where(self.cumulative & np.isin(units, ("bytes", "packets")), units, "")

    @cached_property
    def traffic_bytes_per_unit(self) -> np.ndarray:
        """For counters of traffic in bytes, the bytes one unit of the channel is (512 for sectors); 0 otherwise."""
        if not self.units:
            return np.zeros(len(self.names))
        per_unit = np.where(np.asarray(self.units, dtype=object) == "sectors", SECTOR_BYTES, 1.0)
        return np.where(self.traffic_unit == "bytes", per_unit, 0.0)

    @cached_property
    def seconds_per_unit(self) -> np.ndarray:
        """For counters of time (CPU time, stall time, idle time: their rate is in cores), the seconds one unit of
        the channel is; 0 for every other channel."""
        if not self.units:
            return np.zeros(len(self.names))
        seconds = np.array([SECONDS_PER_TIME_UNIT.get(unit, 0.0) for unit in self.units])
        return np.where(self.cumulative, seconds, 0.0)

    @cached_property
    def scored(self) -> np.ndarray:
        """True where the channel takes part in single-host scoring (static channels do not, paper §4.2)."""
        return np.asarray(self.kinds) != "static"
