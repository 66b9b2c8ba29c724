"""The cgroup collector over a cgroup v2 docker host (three containers), a v1 docker host (two) and this machine."""

from __future__ import annotations

import errno
import logging
import math
import gc
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from producers.collectors.cgroups import CHANNELS, CgroupCollector
from tests.producers.collectors.cgroup_hosts import (NGINX, POSTGRES, REDIS, V1, V1_WORKER, V2, devices_of,
                                                     metric_of, v1_collector, v2_collector)


def same_value(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


@pytest.fixture
def v2_root(tmp_path) -> Path:
    shutil.copytree(V2, tmp_path / "cgroup")
    return tmp_path / "cgroup"


@pytest.fixture
def kernfs_removal(monkeypatch):
    """Reads of an open file whose cgroup was removed fail with ENODEV, as on kernfs; tmpfs would keep serving them."""
    real_pread = os.pread

    def pread(fd, length, offset):
        if os.fstat(fd).st_nlink == 0:
            raise OSError(errno.ENODEV, os.strerror(errno.ENODEV))
        return real_pread(fd, length, offset)

    monkeypatch.setattr(os, "pread", pread)


def test_v2_reads_every_channel_of_each_container_and_skips_files_at_the_parent():
    collector = v2_collector()
    values = collector.collect()
    assert devices_of(collector, values) == {POSTGRES, REDIS, NGINX}
    for device in (POSTGRES, REDIS, NGINX):
        assert {metric_of(collector, n) for n in values if n.endswith(device)} == set(CHANNELS)
    assert values[f"cgroup.cpu_usage_usec.{POSTGRES}"] == 48213377.0
    assert values[f"cgroup.memory_current.{POSTGRES}"] == 120057808.0
    assert values[f"cgroup.memory_shmem.{POSTGRES}"] == 17457152.0
    assert values[f"cgroup.cpu_nr_throttled.{REDIS}"] == 173.0
    assert values[f"cgroup.cpu_throttled_usec.{REDIS}"] == 4117093.0
    assert values[f"cgroup.memory_events_oom_kill.{REDIS}"] == 2.0
    assert values[f"cgroup.memory_events_max.{REDIS}"] == 37.0
    assert values[f"cgroup.cpu_pressure_some_usec.{REDIS}"] == 4533809.0
    assert values[f"cgroup.io_pressure_full_usec.{POSTGRES}"] == 3288410.0


@pytest.mark.parametrize("metric, subsystem, kind, unit", [
    ("cgroup.cpu_usage_usec", "cpu", "counter", "usec"),
    ("cgroup.cpu_system_usec", "cpu", "counter", "usec"),
    ("cgroup.cpu_nr_throttled", "cpu", "event", "periods"),
    ("cgroup.memory_current", "memory", "gauge", "bytes"),
    ("cgroup.memory_max", "memory", "static", "bytes"),
    ("cgroup.memory_file_dirty", "memory", "gauge", "bytes"),
    ("cgroup.memory_pgmajfault", "memory", "counter", "faults"),
    ("cgroup.memory_events_oom_kill", "memory", "event", "events"),
    ("cgroup.io_rbytes", "storage", "counter", "bytes"),
    ("cgroup.io_wios", "storage", "counter", "ios"),
    ("cgroup.memory_pressure_some_usec", "memory", "counter", "usec"),
    ("cgroup.io_pressure_full_usec", "storage", "counter", "usec"),
])
def test_catalog_entries_name_the_group_as_device(metric, subsystem, kind, unit):
    collector = v2_collector()
    collector.collect()
    channel = collector.describe(f"{metric}.{REDIS}")
    assert (channel.name, channel.device) == (f"{metric}.{REDIS}", REDIS)
    assert (channel.subsystem, channel.kind, channel.unit) == (subsystem, kind, unit)


@pytest.mark.parametrize("file_name, content", [
    ("memory.current", b"9" * 400 + b"\n"),  # beyond the range of a float
    ("io.stat", b"259:0 rbytes=" + b"9" * 400 + b" wbytes=16384000 rios=171 wios=312 dbytes=0 dios=0\n"),
    ("cpu.stat", b""),
    ("memory.max", b"\n"),
    ("memory.events", b"low 0 high 0 max 37 oom two oom_kill 2 oom_group_kill 0\n"),
    ("cpu.pressure", b"some avg10=0.00 avg60=0.00 avg300=0.00 total=x\nfull avg10=0.00 total=4187710\n"),
])
def test_a_malformed_value_reads_nan_in_its_own_channels_only(v2_root, file_name, content):
    collector = v2_collector(v2_root)
    before = collector.collect()
    (v2_root / "system.slice" / REDIS / file_name).write_bytes(content)
    after = collector.collect()
    changed = {name for name in after if not same_value(after[name], before[name])}
    assert after.keys() == before.keys() and changed
    assert all(math.isnan(after[name]) and name.endswith(REDIS) for name in changed)


def test_files_and_keys_this_kernel_lacks_leave_their_channels_out(v2_root):
    group = v2_root / "system.slice" / NGINX
    (group / "cpu.stat").write_text("usage_usec 611352\nuser_usec 288110\nsystem_usec 323242\n")
    for resource in ("cpu", "memory", "io"):
        (group / f"{resource}.pressure").unlink()
    collector = v2_collector(v2_root)
    metrics = {metric_of(collector, n) for n in collector.collect() if n.endswith(NGINX)}
    assert "cgroup.cpu_usage_usec" in metrics and "cgroup.cpu_nr_throttled" not in metrics
    assert not any("pressure" in metric for metric in metrics)


def test_group_directory_names_are_sanitised_into_device_names(v2_root):
    shutil.copytree(v2_root / "system.slice" / NGINX, v2_root / "system.slice" / "pod:web 1")
    collector = v2_collector(v2_root)
    values = collector.collect()
    assert "pod_web_1" in devices_of(collector, values)
    assert values["cgroup.cpu_usage_usec.pod_web_1"] == 611352.0


def test_a_vanished_group_reads_nan_until_the_next_rediscovery(v2_root, kernfs_removal):
    collector = v2_collector(v2_root, rediscover_every=3)
    first = collector.read()
    shutil.rmtree(v2_root / "system.slice" / NGINX)
    for _ in range(2):
        reading = collector.read()
        assert reading.names is first.names
        for name, before, now in zip(first.names, first.values, reading.values):
            assert math.isnan(now) if name.endswith(NGINX) else same_value(now, before)
    rediscovered = collector.read()
    assert rediscovered.names is not first.names
    assert devices_of(collector, rediscovered.names) == {POSTGRES, REDIS}


def test_rediscovery_picks_up_a_new_group_after_rediscover_every_reads(v2_root):
    collector = v2_collector(v2_root, rediscover_every=4)
    first = collector.read()
    new_group = "docker-5b0f1e2d3c4a59687766554433221100ffeeddccbbaa99887766554433221100.scope"
    shutil.copytree(v2_root / "system.slice" / REDIS, v2_root / "system.slice" / new_group)
    assert all(collector.read().names is first.names for _ in range(3))
    rediscovered = collector.read()
    assert devices_of(collector, rediscovered.names) == {POSTGRES, REDIS, NGINX, new_group}
    assert rediscovered.names is not first.names
    assert collector.read().names is rediscovered.names


def test_unchanged_groups_keep_the_identical_names_tuple_across_rediscoveries():
    collector = v2_collector(rediscover_every=2)
    first = collector.read()
    assert all(collector.read().names is first.names for _ in range(6))


def test_max_groups_keeps_the_groups_using_the_most_memory_and_logs_once(caplog):
    collector = v2_collector(max_groups=2, rediscover_every=1)
    with caplog.at_level(logging.WARNING):
        readings = [collector.read() for _ in range(3)]
    assert devices_of(collector, readings[-1].names) == {POSTGRES, REDIS}  # 120 MB and 46 MB; nginx has 9 MB
    assert sum("using the most memory" in record.getMessage() for record in caplog.records) == 1
    v1 = v1_collector(max_groups=1)
    assert devices_of(v1, v1.read().names) == {V1_WORKER}


def test_no_group_under_the_parent_makes_the_source_unavailable(tmp_path):
    collector = CgroupCollector(root=V2, parent="kubepods.slice")
    with pytest.raises(OSError, match="no cgroups under"):
        collector.read()
    assert not collector.available()
    assert not CgroupCollector(root=tmp_path).available()


def test_invalid_settings_are_rejected():
    with pytest.raises(ValueError, match="rediscover_every"):
        CgroupCollector(root=V2, rediscover_every=0)
    with pytest.raises(ValueError, match="max_groups"):
        CgroupCollector(root=V2, max_groups=0)


def test_default_root_is_under_sysfs():
    assert CgroupCollector(sysfs="/elsewhere").root == Path("/elsewhere/fs/cgroup")


def files_open_under(folder):
    """Descriptors of this process that point into folder (other threads' sockets and pipes do not count)."""
    opened = []
    for descriptor in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{descriptor}")
        except OSError:
            continue
        if target.startswith(str(folder)):
            opened.append(target)
    return opened


def collector_with_open_files(tmp_path) -> tuple[CgroupCollector, Path]:
    """A collector that has read its own copy of the v2 fixture, keeping files under that copy open."""
    root = tmp_path / "cgroup"
    shutil.copytree(V2, root)
    collector = v2_collector(root)
    collector.read()
    assert files_open_under(root)
    return collector, root


def test_close_releases_every_open_file(tmp_path):
    collector, root = collector_with_open_files(tmp_path)
    collector.close()
    assert files_open_under(root) == []


def test_a_collector_dropped_without_close_releases_its_files(tmp_path):
    collector, root = collector_with_open_files(tmp_path)
    del collector
    gc.collect()
    assert files_open_under(root) == []


FIXTURE_FILES = [(root, parent, path.relative_to(root)) for root, parent in ((V2, "system.slice"), (V1, "docker"))
                 for path in sorted(root.rglob("*")) if path.is_file()]
TOKENS = st.one_of(
    st.sampled_from([b"usage_usec", b"user", b"anon", b"rss", b"total_rss", b"oom_kill", b"max", b"some", b"full",
                     b"total=", b"total=x", b"rbytes=", b"rbytes=-", b"Read", b"Write", b"Total", b"8:0", b"nan",
                     b"-1", b"9" * 400, b"total=" + b"9" * 400, b"rbytes=" + b"9" * 5000]),
    st.integers().map(lambda number: str(number).encode()),
    st.binary(max_size=12))
GARBAGE = st.one_of(
    st.binary(max_size=400),
    st.lists(TOKENS, max_size=40).map(b" ".join),
    st.lists(st.lists(TOKENS, max_size=6).map(b" ".join), max_size=12).map(b"\n".join))
# A real file with one token replaced: the corruption most likely to get past a parser.
ONE_BAD_TOKEN = st.tuples(st.integers(min_value=0, max_value=10 ** 6), TOKENS)


def replace_token(data: bytes, index: int, token: bytes) -> bytes:
    """data with one of its space-separated tokens replaced, lines kept."""
    lines = [line.split(b" ") for line in data.split(b"\n")]
    positions = [(row, column) for row, line in enumerate(lines) for column in range(len(line))]
    row, column = positions[index % len(positions)]
    lines[row][column] = token
    return b"\n".join(b" ".join(line) for line in lines)


def group_of(parent: str, relative: Path) -> str | None:
    """The group a fixture file belongs to, None for files of the root or the parent."""
    parts = relative.parts
    index = parts.index(parent) + 1 if parent in parts else len(parts)
    return parts[index] if index < len(parts) - 1 else None


@settings(max_examples=200, deadline=None)
@given(target=st.sampled_from(FIXTURE_FILES), garbage=st.one_of(GARBAGE, ONE_BAD_TOKEN), at_discovery=st.booleans())
def test_garbage_in_any_one_file_never_crashes_a_read_nor_touches_other_groups(target, garbage, at_discovery):
    root, parent, relative = target
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "cgroup"
        shutil.copytree(root, copy)
        collector = CgroupCollector(root=copy, parent=parent)
        baseline = collector.collect()
        if at_discovery:
            collector.close()
            collector = CgroupCollector(root=copy, parent=parent)
        damaged_file = copy / relative
        damaged_file.write_bytes(garbage if isinstance(garbage, bytes)
                                 else replace_token(damaged_file.read_bytes(), *garbage))
        reading = collector.read()
        collector.close()
    assert all(isinstance(v, float) for v in reading.values) and len(reading.values) == len(reading.names)
    damaged = group_of(parent, relative)
    for name, value in zip(reading.names, list(reading.values)):
        if collector.describe(name).device != damaged:
            assert same_value(value, baseline[name]), name


def test_reads_this_hosts_cgroups():
    """The development VM mounts v1 controllers beside an empty unified hierarchy; the memory controller has a
    group ("process_api") directly under the root, and there is no system.slice."""
    collector = CgroupCollector()
    if not collector.available():  # a host without groups says so in one sentence rather than reading nothing
        with pytest.raises(FileNotFoundError, match="no cgroups under"):
            collector.read()
        return
    reading = collector.read()
    collector.close()
    assert len(reading.names) >= 1
    assert np.isfinite(reading.values).any()
