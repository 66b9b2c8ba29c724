"""Per-node memory usage and allocation placement from /sys/devices/system/node/nodeN/{meminfo,numastat}."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from producers.collectors.base import Collector, Field, ProcTextCollector, Reading
from producers.collectors.meminfo import meminfo_fields
from producers.collectors.sysfs_names import numbered_directories

NODE_ROOT = "devices/system/node"


class NodeFileReader(ProcTextCollector):
    """One text file of one NUMA node, read under sysfs rather than procfs."""

    filename = ""

    def __init__(self, procfs="/proc", sysfs="/sys", node: str = "node0"):
        self.node = node
        self.source = f"/sys/{NODE_ROOT}/{node}/{self.filename}"
        super().__init__(procfs, sysfs)

    def _path(self) -> Path:
        return self.sysfs / NODE_ROOT / self.node / self.filename


class NodeMemInfoReader(NodeFileReader):
    """'Node 0 MemTotal:       32817720 kB' lines as numa.MemTotal.node0, in bytes (pages for HugePages counts)."""

    filename = "meminfo"
    label_tokens = (2,)

    def line_fields(self, number, tokens):
        return meminfo_fields(number, tokens, "numa", 2, self.node)


class NodeNumaStatReader(NodeFileReader):
    """'numa_hit 6457671' lines as counters of page allocations: numa.numa_hit.node0.

    numa_miss (allocated here though another node was preferred) and numa_foreign (meant for here, allocated
    elsewhere) are counters, not events: their rate is the placement signal of the NUMA-misplacement case (paper §6).
    """

    filename = "numastat"

    def line_fields(self, number, tokens):
        if len(tokens) != 2:
            raise ValueError("expected 'name value'")
        return [Field(number, 1, f"numa.{tokens[0].decode()}", self.node, "memory", "counter", "pages")]


class NumaCollector(Collector):
    """Every node's meminfo and numastat as one reading; the names tuple is kept while no node's layout changes."""

    source = "/sys/devices/system/node/node*"
    default_interval_s = 1.0
    reader_classes = (NodeMemInfoReader, NodeNumaStatReader)

    def __init__(self, procfs="/proc", sysfs="/sys"):
        super().__init__(procfs, sysfs)
        self._readers: list[NodeFileReader] | None = None
        self._last_names: dict[NodeFileReader, tuple[str, ...]] = {}
        self._parts: tuple[tuple[str, ...], ...] = ()
        self._combined: tuple[str, ...] = ()

    def read(self) -> Reading:
        if self._readers is None:
            self._readers = self._node_readers()
        readings = [self._read_one(reader) for reader in self._readers]
        if not self._last_names:
            raise FileNotFoundError(f"{self.source}: no node file could be read under {self.sysfs / NODE_ROOT}")
        parts = tuple(reading.names for reading in readings)
        if parts != self._parts:
            self._parts, self._combined = parts, tuple(name for names in parts for name in names)
            self._describe_all()
        return Reading(self._combined, np.concatenate([reading.values for reading in readings]))

    def collect(self) -> dict[str, float]:
        reading = self.read()
        return dict(zip(reading.names, reading.values.tolist()))

    def close(self) -> None:
        for reader in self._readers or ():
            reader.close()

    def _node_readers(self) -> list[NodeFileReader]:
        """One reader per file per node; FileNotFoundError on a host without NUMA nodes in sysfs."""
        nodes = numbered_directories(self.sysfs / NODE_ROOT, "node")
        if not nodes:
            raise FileNotFoundError(f"{self.source}: no NUMA nodes under {self.sysfs / NODE_ROOT}")
        return [reader(self.procfs, self.sysfs, node.name) for node in nodes for reader in self.reader_classes]

    def _read_one(self, reader: NodeFileReader) -> Reading:
        """One file's reading; when it cannot be read, NaN for the channels it had (none if it never was read)."""
        try:
            reading = reader.read()
        except (OSError, ValueError) as error:  # ValueError: garbage that repeats a channel name
            self._warn_once(reader.source, "%s: cannot read %s (%s); its channels read NaN", self.source,
                            reader.source, error)
            names = self._last_names.get(reader, ())
            return Reading(names, np.full(len(names), np.nan))
        self._last_names[reader] = reading.names
        return reading

    def _describe_all(self) -> None:
        """Copy the readers' catalog entries for the channels now reported."""
        for reader, names in zip(self._readers, self._parts):
            for name in names:
                self._channels[name] = reader.describe(name)
