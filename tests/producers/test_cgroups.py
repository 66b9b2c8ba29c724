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
from tests.conftest import FIXTURES

V2 = FIXTURES / "cgroup-v2"
V1 = FIXTURES / "cgroup-v1"
POSTGRES = "docker-e94cbe407f7f6a9581e4c2eaa360b2e2c4bb658a97ecf9b6e15f8052ac1f9d73.scope"
REDIS = "docker-ebf47374915f9435c087c68acf4d66215b775504928562a9d0e0a71564364e8c.scope"
NGINX = "docker-63159f9c66844d20c2ef7e6eb54f189fb4b49d1e76b13a4eca6fb19f2173e7e6.scope"
V1_APP = "21c5e4013ea3b37fce494ed2d0362262705fb80fca030b2de654587e6b4a70a1"
V1_WORKER = "d71fc295ee5416a54d799fedce56a217edbfea6556e7976c2934277a0d41d51c"
V1_METRICS = {"cgroup.cpu_usage_usec", "cgroup.cpu_user_usec", "cgroup.cpu_system_usec", "cgroup.memory_current",
              "cgroup.memory_max", "cgroup.memory_anon", "cgroup.memory_file", "cgroup.memory_shmem",
              "cgroup.memory_file_dirty", "cgroup.memory_file_writeback", "cgroup.memory_pgfault",
              "cgroup.memory_pgmajfault", "cgroup.memory_events_oom_kill", "cgroup.io_rbytes", "cgroup.io_wbytes",
              "cgroup.io_rios", "cgroup.io_wios", "cgroup.cpu_nr_throttled", "cgroup.cpu_throttled_usec"}


def v2_collector(root: Path = V2, **options) -> CgroupCollector:
    return CgroupCollector(root=root, parent="system.slice", **options)


def v1_collector(root: Path = V1, **options) -> CgroupCollector:
    return CgroupCollector(root=root, parent="docker", **options)


def metric_of(collector: CgroupCollector, name: str) -> str:
    """The channel name without its device: what v1 and v2 hosts share."""
    return name[:-len(collector.describe(name).device) - 1]


def devices_of(collector: CgroupCollector, names) -> set[str]:
    return {collector.describe(name).device for name in names}


def same_value(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


@pytest.fixture
def v2_root(tmp_path) -> Path:
    shutil.copytree(V2, tmp_path / "cgroup")
    return tmp_path / "cgroup"


@pytest.fixture
def v1_root(tmp_path) -> Path:
    shutil.copytree(V1, tmp_path / "cgroup")
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


def test_v1_and_v2_hosts_share_channel_names_and_catalog_entries():
    v1, v2 = v1_collector(), v2_collector()
    v1_values, v2_values = v1.collect(), v2.collect()
    assert devices_of(v1, v1_values) == {V1_APP, V1_WORKER}
    assert {metric_of(v1, name) for name in v1_values} == V1_METRICS
    assert V1_METRICS <= {metric_of(v2, name) for name in v2_values}
    for metric in V1_METRICS:
        old, new = v1.describe(f"{metric}.{V1_APP}"), v2.describe(f"{metric}.{NGINX}")
        assert (old.subsystem, old.kind, old.unit) == (new.subsystem, new.kind, new.unit)


def test_v1_converts_nanoseconds_and_user_hz_ticks_to_microseconds():
    values = v1_collector().collect()
    usec_per_tick = 1e6 / os.sysconf("SC_CLK_TCK")
    assert values[f"cgroup.cpu_usage_usec.{V1_APP}"] == pytest.approx(4873212934 / 1000)
    assert values[f"cgroup.cpu_user_usec.{V1_APP}"] == pytest.approx(342 * usec_per_tick)
    assert values[f"cgroup.cpu_system_usec.{V1_WORKER}"] == pytest.approx(2104 * usec_per_tick)


def test_v1_reads_cfs_throttling_from_the_cpu_controller_in_microseconds():
    values = v1_collector().collect()
    assert values[f"cgroup.cpu_nr_throttled.{V1_APP}"] == 20
    assert values[f"cgroup.cpu_throttled_usec.{V1_APP}"] == pytest.approx(1592825214 / 1000)
    assert values[f"cgroup.cpu_nr_throttled.{V1_WORKER}"] == 0


def test_v1_memory_names_map_onto_v2_names():
    values = v1_collector().collect()
    assert values[f"cgroup.memory_current.{V1_APP}"] == 15601664.0
    assert values[f"cgroup.memory_anon.{V1_WORKER}"] == 211681280.0  # rss
    assert values[f"cgroup.memory_file.{V1_WORKER}"] == 97280000.0  # cache
    assert values[f"cgroup.memory_file_dirty.{V1_WORKER}"] == 2863104.0  # dirty
    assert values[f"cgroup.memory_pgmajfault.{V1_WORKER}"] == 1123.0


def test_v1_memory_stat_counts_the_groups_subtree(v1_root):
    (v1_root / "memory" / "docker" / V1_APP / "memory.stat").write_text(
        "cache 0\nrss 0\npgfault 0\ntotal_cache 448876544\ntotal_rss 487542784\ntotal_pgfault 5919106\n")
    values = v1_collector(v1_root).collect()
    assert values[f"cgroup.memory_anon.{V1_APP}"] == 487542784.0
    assert values[f"cgroup.memory_pgfault.{V1_APP}"] == 5919106.0


def test_io_stat_is_summed_over_devices_and_empty_means_zero():
    values = v2_collector().collect()
    assert values[f"cgroup.io_rbytes.{POSTGRES}"] == 23449600 + 1048576
    assert values[f"cgroup.io_wbytes.{POSTGRES}"] == 184320000 + 65536
    assert values[f"cgroup.io_rios.{POSTGRES}"] == 612 + 31
    assert values[f"cgroup.io_wios.{POSTGRES}"] == 9873 + 4
    assert [values[f"cgroup.io_{k}.{NGINX}"] for k in ("rbytes", "wbytes", "rios", "wios")] == [0.0] * 4


def test_v1_blkio_sums_reads_and_writes_over_devices_without_totals():
    values = v1_collector().collect()
    assert values[f"cgroup.io_rbytes.{V1_WORKER}"] == 47104000 + 4096
    assert values[f"cgroup.io_wbytes.{V1_WORKER}"] == 905216000 + 1048576
    assert values[f"cgroup.io_rios.{V1_WORKER}"] == 1702 + 1
    assert values[f"cgroup.io_wios.{V1_WORKER}"] == 21094 + 256


def test_an_unlimited_memory_limit_reads_nan_and_a_limit_reads_bytes():
    v2, v1 = v2_collector().collect(), v1_collector().collect()
    assert math.isnan(v2[f"cgroup.memory_max.{POSTGRES}"])  # "max"
    assert v2[f"cgroup.memory_max.{REDIS}"] == 67108864.0
    assert math.isnan(v1[f"cgroup.memory_max.{V1_WORKER}"])  # 9223372036854771712
    assert v1[f"cgroup.memory_max.{V1_APP}"] == 268435456.0


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


def test_a_hybrid_host_is_read_through_its_v1_controllers(tmp_path):
    shutil.copytree(V1, tmp_path / "cgroup")
    (tmp_path / "cgroup" / "unified").mkdir()
    (tmp_path / "cgroup" / "unified" / "cgroup.controllers").write_text("\n")
    collector = v1_collector(tmp_path / "cgroup")
    assert devices_of(collector, collector.read().names) == {V1_APP, V1_WORKER}


def test_a_v2_hierarchy_mounted_at_unified_alone_is_found(tmp_path):
    shutil.copytree(V2, tmp_path / "cgroup" / "unified")
    collector = v2_collector(tmp_path / "cgroup")
    assert devices_of(collector, collector.read().names) == {POSTGRES, REDIS, NGINX}


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
