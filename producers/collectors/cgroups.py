"""Per-container CPU, memory and I/O accounting from the cgroup filesystem (paper §3: container attribution).

The groups are the direct children of one parent cgroup ("docker", "kubepods.slice", "" for the root's children).
cgroup v2 and v1 files map onto the same channel names (cgroup_files.py), so detectors and attribution see one
vocabulary on either kind of host.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from producers.collectors.base import Collector, Reading
from producers.collectors.cgroup_files import CHANNELS, CgroupFile, Hierarchy, Metric, ParsedFile, detect_hierarchy
from producers.fast_read.persistent_file import PersistentFile

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class BoundFile:
    """One open file of one group and the channels it fills, from `start` on in the value vector."""

    handle: PersistentFile
    parse: Callable[[bytes], ParsedFile]
    fields: tuple[tuple[bytes, Metric], ...]
    names: tuple[str, ...]
    start: int


def device_names(groups: list[str]) -> dict[str, str]:
    """Each group's device name: its directory name with characters outside [A-Za-z0-9_.-] made "_", kept unique.

    >>> device_names(["docker-1a.scope", "pod:web", "pod_web"])
    {'docker-1a.scope': 'docker-1a.scope', 'pod:web': 'pod_web', 'pod_web': 'pod_web-2'}
    """
    devices: dict[str, str] = {}
    taken: set[str] = set()
    for group in groups:
        device = base = _UNSAFE.sub("_", group)
        suffix = 2
        while device in taken:
            device, suffix = f"{base}-{suffix}", suffix + 1
        taken.add(device)
        devices[group] = device
    return devices


def child_directories(path: Path) -> list[str]:
    """Names of the directories directly under path; none when path is missing (controller or parent absent)."""
    try:
        with os.scandir(path) as entries:
            return [entry.name for entry in entries if entry.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _first_present(keys: tuple[bytes, ...], parsed: ParsedFile) -> bytes | None:
    """The first of keys that the parsed file has."""
    return next((key for key in keys if key in parsed), None)


class CgroupCollector(Collector):
    """CPU time, memory use and limits, OOM events, I/O and pressure stalls of each group under one parent cgroup.

    The group list is found again every `rediscover_every` reads, not on every read, because a changed channel list
    restarts baselines downstream; in between, a removed group's channels read NaN.
    """

    source = "cgroups"
    default_interval_s = 1.0

    def __init__(self, procfs="/proc", sysfs="/sys", root: str | Path | None = None, parent: str = "",
                 max_groups: int = 64, rediscover_every: int = 60):
        super().__init__(procfs, sysfs)
        if max_groups < 1 or rediscover_every < 1:
            raise ValueError(f"cgroups: max_groups ({max_groups}) and rediscover_every ({rediscover_every}) "
                             "must be at least 1")
        self.root = Path(root) if root is not None else self.sysfs / "fs" / "cgroup"
        self.parent = parent.strip("/")
        self.max_groups = max_groups
        self.rediscover_every = rediscover_every
        self._files: list[BoundFile] = []
        self._handles: dict[Path, PersistentFile] = {}
        self._count = 0
        self._reads = 0

    def read(self) -> Reading:
        """Every group's values; NaN where a file or value could not be read."""
        if not self._files or self._reads % self.rediscover_every == 0:
            self._discover()
        self._reads += 1
        values = np.full(self._count, np.nan)
        for bound in self._files:
            self._fill(bound, values)
        return Reading(self._names, values)

    def collect(self) -> dict[str, float]:
        """Channel name → value, from one read."""
        reading = self.read()
        return dict(zip(reading.names, reading.values.tolist()))

    def close(self) -> None:
        """Close every open file; a later read discovers the groups again."""
        for handle in self._handles.values():
            handle.close()
        self._handles = {}
        self._files = []

    def _fill(self, bound: BoundFile, values: np.ndarray) -> None:
        """Write one file's channels into values; they stay NaN when the file or a value cannot be read."""
        try:
            parsed = bound.parse(bound.handle.read())
        except OSError:  # the group was removed since the last discovery: ENODEV on the open file, then ENOENT
            return
        except ValueError as error:
            self._warn_malformed(bound.handle.path, error)
            return
        for offset, (key, metric) in enumerate(bound.fields):
            try:
                values[bound.start + offset] = metric.value(parsed[key])
            except (LookupError, ValueError, ArithmeticError) as error:
                self._warn_malformed(bound.handle.path, error)

    def _warn_malformed(self, path: Path, error: Exception) -> None:
        """Log once per file name (not per group, whose number is unbounded over time)."""
        self._warn_once(f"malformed:{path.name}", "%s: malformed %s (%s); its channels read NaN", self.source, path,
                        error)

    def _discover(self) -> None:
        """Find the groups and their readable files; the names tuple stays the same object when nothing changed."""
        hierarchy = detect_hierarchy(self.root)
        groups = self._select(hierarchy, self._group_names(hierarchy))
        previous, self._handles = self._handles, {}
        self._files, self._count = [], 0
        for group, device in device_names(groups).items():
            for spec in hierarchy.files:
                self._add(self._bind(hierarchy, spec, group, device, previous))
        for handle in previous.values():
            handle.close()
        if not self._files:
            raise FileNotFoundError(f"cgroups: no cgroups under {self._parent_paths(hierarchy)}")
        names = tuple(name for bound in self._files for name in bound.names)
        if names != self._names:
            self._names = names

    def _add(self, bound: BoundFile | None) -> None:
        """Append a bound file, whose channels take the next slots of the value vector."""
        if bound is not None:
            self._files.append(bound)
            self._count += len(bound.fields)

    def _group_names(self, hierarchy: Hierarchy) -> list[str]:
        """Directories directly under the parent in any controller, sorted so the channel order is stable."""
        names: set[str] = set()
        for controller in hierarchy.controllers():
            names.update(child_directories(hierarchy.base / controller / self.parent))
        return sorted(names)

    def _parent_paths(self, hierarchy: Hierarchy) -> str:
        """Where the groups are looked for, for messages."""
        return ", ".join(str(hierarchy.base / controller / self.parent) for controller in hierarchy.controllers())

    def _select(self, hierarchy: Hierarchy, groups: list[str]) -> list[str]:
        """At most max_groups groups: those using the most memory now, kept in name order."""
        if len(groups) <= self.max_groups:
            return groups
        usage = {group: self._memory_usage(hierarchy, group) for group in groups}
        kept = sorted(groups, key=lambda group: (-usage[group], group))[:self.max_groups]
        self._warn_once("max_groups", "%s: %d groups under %s; reading the %d using the most memory", self.source,
                        len(groups), self._parent_paths(hierarchy), self.max_groups)
        return sorted(kept)

    def _memory_usage(self, hierarchy: Hierarchy, group: str) -> int:
        """A group's current memory use in bytes; -1 when it cannot be read, which ranks the group last."""
        spec = hierarchy.usage_file()
        try:
            return int((hierarchy.base / spec.controller / self.parent / group / spec.names[0]).read_bytes().split()[0])
        except (OSError, ValueError, IndexError):
            return -1

    def _bind(self, hierarchy: Hierarchy, spec: CgroupFile, group: str, device: str,
              previous: dict[Path, PersistentFile]) -> BoundFile | None:
        """The group's file for spec and the channels it has now; None when it has no readable such file."""
        directory = hierarchy.base / spec.controller / self.parent / group
        for file_name in spec.names:
            path = directory / file_name
            handle = previous.pop(path, None) or PersistentFile(path)
            try:
                parsed = spec.parse(handle.read())
            except OSError:  # this controller has no such group, or the kernel lacks this file
                handle.close()
                continue
            except ValueError as error:
                self._warn_malformed(path, error)
                handle.close()
                return None
            return self._bound_file(handle, spec, parsed, device)
        return None

    def _bound_file(self, handle: PersistentFile, spec: CgroupFile, parsed: ParsedFile,
                    device: str) -> BoundFile | None:
        """The channels of spec whose keys this kernel writes; None when it writes none of them."""
        fields = tuple((key, metric) for metric in spec.metrics
                       if (key := _first_present(metric.keys, parsed)) is not None)
        if not fields:
            handle.close()
            return None
        self._handles[handle.path] = handle
        names = tuple(self._register(metric.name, device, *CHANNELS[metric.name]) for _, metric in fields)
        return BoundFile(handle, spec.parse, fields, names, self._count)
