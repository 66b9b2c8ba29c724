"""Per-container CPU, memory and I/O accounting from the cgroup filesystem (paper §3: container attribution).

The groups are the direct children of one parent cgroup ("docker", "kubepods.slice", "" for the root's children).
cgroup v2 and v1 files map onto the same channel names, so detectors and attribution see one vocabulary on either
kind of host. A memory limit the kernel reports as unlimited ("max" in v2, a number near 2^63 in v1) reads NaN.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from producers.collectors.base import Collector, Reading
from producers.fast_read.persistent_file import PersistentFile

ParsedFile = Mapping[bytes, bytes | int]

# cgroup v1 writes "no limit" as PAGE_COUNTER_MAX pages in bytes: 9223372036854771712 with 4 KiB pages.
V1_UNLIMITED_FROM = 2 ** 62
USEC_PER_TICK = 1e6 / os.sysconf("SC_CLK_TCK")
V1_CONTROLLERS = ("cpuacct", "memory", "blkio")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
# memory.stat keys of v2 ("kernel" from Linux 5.18 on), and the v1 keys of the same quantities (v1 has no "kernel").
MEMORY_STAT_V2_KEYS = (b"anon", b"file", b"kernel", b"shmem", b"file_dirty", b"file_writeback", b"pgfault",
                       b"pgmajfault")
MEMORY_STAT_V1_KEYS = {"cgroup.memory_anon": b"rss", "cgroup.memory_file": b"cache", "cgroup.memory_shmem": b"shmem",
                       "cgroup.memory_file_dirty": b"dirty", "cgroup.memory_file_writeback": b"writeback",
                       "cgroup.memory_pgfault": b"pgfault", "cgroup.memory_pgmajfault": b"pgmajfault"}

# name → (subsystem, kind, unit); the v1 and v2 files below both map onto these channels.
CHANNELS = {
    "cgroup.cpu_usage_usec": ("cpu", "counter", "usec"),
    "cgroup.cpu_user_usec": ("cpu", "counter", "usec"),
    "cgroup.cpu_system_usec": ("cpu", "counter", "usec"),
    "cgroup.cpu_nr_throttled": ("cpu", "event", "periods"),
    "cgroup.cpu_throttled_usec": ("cpu", "counter", "usec"),
    "cgroup.memory_current": ("memory", "gauge", "bytes"),
    "cgroup.memory_max": ("memory", "static", "bytes"),
    "cgroup.memory_anon": ("memory", "gauge", "bytes"),
    "cgroup.memory_file": ("memory", "gauge", "bytes"),
    "cgroup.memory_kernel": ("memory", "gauge", "bytes"),
    "cgroup.memory_shmem": ("memory", "gauge", "bytes"),
    "cgroup.memory_file_dirty": ("memory", "gauge", "bytes"),
    "cgroup.memory_file_writeback": ("memory", "gauge", "bytes"),
    "cgroup.memory_pgfault": ("memory", "counter", "faults"),
    "cgroup.memory_pgmajfault": ("memory", "counter", "faults"),
    "cgroup.memory_events_oom": ("memory", "event", "events"),
    "cgroup.memory_events_oom_kill": ("memory", "event", "events"),
    "cgroup.memory_events_high": ("memory", "event", "events"),
    "cgroup.memory_events_max": ("memory", "event", "events"),
    "cgroup.io_rbytes": ("storage", "counter", "bytes"),
    "cgroup.io_wbytes": ("storage", "counter", "bytes"),
    "cgroup.io_rios": ("storage", "counter", "ios"),
    "cgroup.io_wios": ("storage", "counter", "ios"),
    "cgroup.cpu_pressure_some_usec": ("cpu", "counter", "usec"),
    "cgroup.cpu_pressure_full_usec": ("cpu", "counter", "usec"),
    "cgroup.memory_pressure_some_usec": ("memory", "counter", "usec"),
    "cgroup.memory_pressure_full_usec": ("memory", "counter", "usec"),
    "cgroup.io_pressure_some_usec": ("storage", "counter", "usec"),
    "cgroup.io_pressure_full_usec": ("storage", "counter", "usec"),
}


@dataclass(frozen=True)
class Metric:
    """One channel of a cgroup file: its name, the file's keys for it by preference, and how to scale it."""

    name: str
    keys: tuple[bytes, ...]
    scale: float = 1.0
    unlimited_from: float = math.inf

    def value(self, raw: bytes | int) -> float:
        """The channel's value for a raw token; ValueError or OverflowError when the token is not a number."""
        if raw == b"max":  # cgroup v2's word for no limit
            return math.nan
        number = int(raw)
        return math.nan if number >= self.unlimited_from else float(number) * self.scale


@dataclass(frozen=True)
class CgroupFile:
    """A file every group has: its controller directory ("" in v2), its names by preference, parser and metrics."""

    controller: str
    names: tuple[str, ...]
    parse: Callable[[bytes], ParsedFile]
    metrics: tuple[Metric, ...]


@dataclass(frozen=True)
class Hierarchy:
    """Where the cgroup files of a host are, and which files each group has there."""

    base: Path
    files: tuple[CgroupFile, ...]

    def controllers(self) -> tuple[str, ...]:
        """The directories under base whose subtrees hold groups: one per v1 controller, "" for v2."""
        return tuple(dict.fromkeys(spec.controller for spec in self.files))

    def usage_file(self) -> CgroupFile:
        """The file holding a group's current memory use, which ranks groups when there are too many."""
        return next(spec for spec in self.files if spec.metrics[0].name == "cgroup.memory_current")


@dataclass(frozen=True)
class BoundFile:
    """One open file of one group and the channels it fills, from `start` on in the value vector."""

    handle: PersistentFile
    parse: Callable[[bytes], ParsedFile]
    fields: tuple[tuple[bytes, Metric], ...]
    names: tuple[str, ...]
    start: int


def parse_keyed(data: bytes) -> ParsedFile:
    """Files of "key value" lines: cpu.stat, memory.stat, memory.events, cpuacct.stat, memory.oom_control."""
    tokens = data.split()
    return dict(zip(tokens[::2], tokens[1::2]))


def parse_single(data: bytes) -> ParsedFile:
    """Files of one value: memory.current, memory.max, cpuacct.usage, memory.usage_in_bytes."""
    tokens = data.split(None, 1)
    return {b"value": tokens[0]} if tokens else {}


def parse_pressure(data: bytes) -> ParsedFile:
    """PSI files ("some avg10=… total=N", "full … total=N"): the cumulative stall time of each line, in µs."""
    totals = {}
    for line in data.splitlines():
        tokens = line.split()
        if tokens and tokens[-1].startswith(b"total="):
            totals[tokens[0]] = tokens[-1][6:]
    return totals


def parse_io_stat(data: bytes) -> ParsedFile:
    """v2 io.stat ("8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0" per device), summed over devices."""
    sums = dict.fromkeys((b"rbytes", b"wbytes", b"rios", b"wios"), 0)
    for token in data.split():
        key, _, value = token.partition(b"=")
        if key in sums:
            sums[key] += int(value)
    return sums


def parse_blkio(data: bytes) -> ParsedFile:
    """v1 blkio.throttle files ("8:0 Read 123" per device and operation), summed over devices; Total lines skipped."""
    sums = {b"Read": 0, b"Write": 0}
    for line in data.splitlines():
        tokens = line.split()
        if len(tokens) == 3 and tokens[1] in sums:
            sums[tokens[1]] += int(tokens[2])
    return sums


def _metrics(*specs: tuple[str, tuple[bytes, ...]], scale: float = 1.0,
             unlimited_from: float = math.inf) -> tuple[Metric, ...]:
    """Metrics sharing one scale, from (name, keys) pairs."""
    return tuple(Metric(name, keys, scale, unlimited_from) for name, keys in specs)


def _memory_stat_v1_metrics() -> tuple[Metric, ...]:
    """memory.stat channels under their v1 keys; total_* counts the whole subtree, as v2's memory.stat does.

    The plain keys count the group's own tasks only: nothing for a pod whose containers are sub-groups.
    """
    return _metrics(*((name, (b"total_" + key, key)) for name, key in MEMORY_STAT_V1_KEYS.items()))


def _pressure(resource: str) -> CgroupFile:
    """A PSI file (Linux >= 4.20); the cgroup-level cpu "full" line appears in Linux 5.13."""
    return CgroupFile("", (f"{resource}.pressure",), parse_pressure,
                      _metrics((f"cgroup.{resource}_pressure_some_usec", (b"some",)),
                               (f"cgroup.{resource}_pressure_full_usec", (b"full",))))


V2_FILES = (
    # nr_throttled and throttled_usec appear only where the cpu controller is enabled for the group.
    CgroupFile("", ("cpu.stat",), parse_keyed, _metrics(
        ("cgroup.cpu_usage_usec", (b"usage_usec",)), ("cgroup.cpu_user_usec", (b"user_usec",)),
        ("cgroup.cpu_system_usec", (b"system_usec",)), ("cgroup.cpu_nr_throttled", (b"nr_throttled",)),
        ("cgroup.cpu_throttled_usec", (b"throttled_usec",)))),
    CgroupFile("", ("memory.current",), parse_single, _metrics(("cgroup.memory_current", (b"value",)))),
    CgroupFile("", ("memory.max",), parse_single, _metrics(("cgroup.memory_max", (b"value",)))),
    CgroupFile("", ("memory.stat",), parse_keyed,
               _metrics(*((f"cgroup.memory_{key.decode()}", (key,)) for key in MEMORY_STAT_V2_KEYS))),
    CgroupFile("", ("memory.events",), parse_keyed, _metrics(
        ("cgroup.memory_events_oom", (b"oom",)), ("cgroup.memory_events_oom_kill", (b"oom_kill",)),
        ("cgroup.memory_events_high", (b"high",)), ("cgroup.memory_events_max", (b"max",)))),
    CgroupFile("", ("io.stat",), parse_io_stat, _metrics(
        ("cgroup.io_rbytes", (b"rbytes",)), ("cgroup.io_wbytes", (b"wbytes",)),
        ("cgroup.io_rios", (b"rios",)), ("cgroup.io_wios", (b"wios",)))),
    _pressure("cpu"), _pressure("memory"), _pressure("io"),
)

V1_FILES = (
    CgroupFile("cpuacct", ("cpuacct.usage",), parse_single,
               _metrics(("cgroup.cpu_usage_usec", (b"value",)), scale=1e-3)),  # ns
    CgroupFile("cpuacct", ("cpuacct.stat",), parse_keyed, _metrics(
        ("cgroup.cpu_user_usec", (b"user",)), ("cgroup.cpu_system_usec", (b"system",)), scale=USEC_PER_TICK)),
    # CFS quota throttling is counted by the cpu controller (throttled_time in ns).
    CgroupFile("cpu", ("cpu.stat",), parse_keyed, _metrics(("cgroup.cpu_nr_throttled", (b"nr_throttled",)))
               + _metrics(("cgroup.cpu_throttled_usec", (b"throttled_time",)), scale=1e-3)),
    CgroupFile("memory", ("memory.usage_in_bytes",), parse_single, _metrics(("cgroup.memory_current", (b"value",)))),
    CgroupFile("memory", ("memory.limit_in_bytes",), parse_single,
               _metrics(("cgroup.memory_max", (b"value",)), unlimited_from=V1_UNLIMITED_FROM)),
    CgroupFile("memory", ("memory.stat",), parse_keyed, _memory_stat_v1_metrics()),
    # oom_kill is in memory.oom_control from Linux 4.13 on.
    CgroupFile("memory", ("memory.oom_control",), parse_keyed,
               _metrics(("cgroup.memory_events_oom_kill", (b"oom_kill",)))),
    # The _recursive files count the subtree, as v2's io.stat does.
    CgroupFile("blkio", ("blkio.throttle.io_service_bytes_recursive", "blkio.throttle.io_service_bytes"), parse_blkio,
               _metrics(("cgroup.io_rbytes", (b"Read",)), ("cgroup.io_wbytes", (b"Write",)))),
    CgroupFile("blkio", ("blkio.throttle.io_serviced_recursive", "blkio.throttle.io_serviced"), parse_blkio,
               _metrics(("cgroup.io_rios", (b"Read",)), ("cgroup.io_wios", (b"Write",)))),
)


def detect_hierarchy(root: Path) -> Hierarchy:
    """v2 when root is a cgroup2 mount, else the v1 controllers, else the v2 half of a hybrid mount (root/unified).

    On hybrid hosts the v1 controllers hold the cpuacct, memory and blkio accounting while the unified hierarchy
    mostly tracks processes, so v1 is preferred there.
    """
    if (root / "cgroup.controllers").is_file():
        return Hierarchy(root, V2_FILES)
    if any((root / controller).is_dir() for controller in V1_CONTROLLERS):
        return Hierarchy(root, V1_FILES)
    if (root / "unified" / "cgroup.controllers").is_file():
        return Hierarchy(root / "unified", V2_FILES)
    raise FileNotFoundError(f"cgroups: no cgroup v1 or v2 hierarchy at {root}")


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
