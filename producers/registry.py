"""The table of collectors of one agent, and the catalog that orders their channels in frames."""

from __future__ import annotations

import logging
import math

from producers.collectors.base import Collector
from producers.collectors.diskstats import DiskStatsCollector
from producers.collectors.meminfo import MemInfoCollector
from producers.collectors.netdev import NetDevCollector
from producers.collectors.procstat import ProcStatCollector
from producers.collectors.snmp import SnmpCollector
from schemas.records import Catalog, Channel

log = logging.getLogger(__name__)


class DuplicateChannelError(ValueError):
    """Two collectors reported the same channel name."""


def default_collectors(procfs: str = "/proc", sysfs: str = "/sys") -> list[Collector]:
    return [ProcStatCollector(procfs, sysfs), MemInfoCollector(procfs, sysfs), NetDevCollector(procfs, sysfs),
            SnmpCollector(procfs, sysfs), DiskStatsCollector(procfs, sysfs)]


class CollectorRegistry:
    """Collects every available source into one vector in catalog order; new channels extend the catalog."""

    def __init__(self, collectors: list[Collector], host: str, cluster: str, interval_s: float):
        self.collectors = [c for c in collectors if c.available()]
        self.host, self.cluster, self.interval_s = host, cluster, interval_s
        self._index: dict[str, int] = {}
        self._owner: dict[str, Collector] = {}
        self._seen_by: dict[int, set[str]] = {id(c): set() for c in self.collectors}
        self._channels: list[Channel] = []
        self.catalog = Catalog(host, cluster, (), interval_s, version=1)

    def sample(self) -> tuple[list[float], bool]:
        """Every channel's current value in catalog order (NaN where unread), and whether the catalog changed."""
        readings = [(collector, self._read(collector)) for collector in self.collectors]
        changed = any([self._register_new(collector, values) for collector, values in readings])
        if changed:
            self.catalog = Catalog(self.host, self.cluster, tuple(self._channels), self.interval_s)
            log.info("catalog of %s now has %d channels (version %d)", self.host, len(self._channels),
                     self.catalog.version)
        vector = [math.nan] * len(self._channels)
        for _, values in readings:
            for name, value in values.items():
                vector[self._index[name]] = value
        return vector, changed

    def _read(self, collector: Collector) -> dict[str, float]:
        try:
            return collector.collect()
        except OSError as error:
            log.warning("%s: read failed (%s); its channels are NaN in this frame", collector.source, error)
            return {}

    def _register_new(self, collector: Collector, values: dict[str, float]) -> bool:
        """Add the channels this collector reports for the first time; a name another collector owns is an error."""
        new = values.keys() - self._seen_by[id(collector)]
        for name in [n for n in values if n in new] if new else ():
            owner = self._owner.setdefault(name, collector)
            if owner is not collector:
                raise DuplicateChannelError(f"channel {name!r} is reported by both {owner.source} "
                                            f"and {collector.source}")
            self._index[name] = len(self._channels)
            self._channels.append(collector.describe(name))
        self._seen_by[id(collector)] |= new
        return bool(new)
