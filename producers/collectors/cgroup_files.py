"""The cgroup files of v1 and v2 hierarchies: which files each group has, how each parses, which channels it fills.

cgroup v2 and v1 files map onto the same channel names, so detectors and attribution see one vocabulary on either
kind of host. A memory limit the kernel reports as unlimited ("max" in v2, a number near 2^63 in v1) reads NaN.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

ParsedFile = Mapping[bytes, bytes | int]

# cgroup v1 writes "no limit" as PAGE_COUNTER_MAX pages in bytes: 9223372036854771712 with 4 KiB pages.
V1_UNLIMITED_FROM = 2 ** 62
USEC_PER_TICK = 1e6 / os.sysconf("SC_CLK_TCK")
V1_CONTROLLERS = ("cpuacct", "memory", "blkio")
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
