"""The cgroup v1 and v2 files: their parsers, scales and unlimited values, the hierarchy a mount holds, and the one
channel vocabulary both kinds of host map onto."""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path

import pytest

from producers.collectors.cgroup_files import (V1_FILES, V2_FILES, Metric, detect_hierarchy, parse_blkio,
                                               parse_io_stat, parse_keyed, parse_pressure, parse_single)
from tests.producers.collectors.cgroup_hosts import (NGINX, POSTGRES, REDIS, V1, V1_APP, V1_WORKER, V2, devices_of,
                                                     metric_of, v1_collector, v2_collector)

V1_METRICS = {"cgroup.cpu_usage_usec", "cgroup.cpu_user_usec", "cgroup.cpu_system_usec", "cgroup.memory_current",
              "cgroup.memory_max", "cgroup.memory_anon", "cgroup.memory_file", "cgroup.memory_shmem",
              "cgroup.memory_file_dirty", "cgroup.memory_file_writeback", "cgroup.memory_pgfault",
              "cgroup.memory_pgmajfault", "cgroup.memory_events_oom_kill", "cgroup.io_rbytes", "cgroup.io_wbytes",
              "cgroup.io_rios", "cgroup.io_wios", "cgroup.cpu_nr_throttled", "cgroup.cpu_throttled_usec"}


@pytest.fixture
def v1_root(tmp_path) -> Path:
    shutil.copytree(V1, tmp_path / "cgroup")
    return tmp_path / "cgroup"


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


def test_the_parsers_read_keyed_single_pressure_and_summed_io_files():
    assert parse_keyed(b"usage_usec 10\nuser_usec 7\n") == {b"usage_usec": b"10", b"user_usec": b"7"}
    assert parse_single(b"max\n") == {b"value": b"max"} and parse_single(b"\n") == {}
    assert parse_pressure(b"some avg10=0.00 avg60=0.00 avg300=0.00 total=42\n"
                          b"full avg10=0.00 avg60=0.00 avg300=0.00 total=7\n") == {b"some": b"42", b"full": b"7"}
    assert parse_io_stat(b"8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0\n"
                         b"259:0 rbytes=10 wbytes=20 rios=30 wios=40 dbytes=0 dios=0\n") == {
        b"rbytes": 11, b"wbytes": 22, b"rios": 33, b"wios": 44}
    assert parse_blkio(b"8:0 Read 100\n8:0 Write 50\n8:16 Read 1\n8:16 Total 151\nTotal 151\n") == {
        b"Read": 101, b"Write": 50}


def test_a_metric_scales_its_value_and_reads_no_limit_as_nan():
    usage = Metric("cgroup.cpu_usage_usec", (b"value",), scale=1e-3)
    assert usage.value(b"4873212934") == pytest.approx(4873212.934)
    limit = Metric("cgroup.memory_max", (b"value",), unlimited_from=2 ** 62)
    assert math.isnan(limit.value(b"max")) and math.isnan(limit.value(b"9223372036854771712"))
    assert limit.value(b"268435456") == 268435456.0 and limit.value(7) == 7.0
    with pytest.raises(ValueError):
        limit.value(b"lots")


def test_the_hierarchy_is_told_by_what_the_mount_holds(tmp_path):
    v2, v1 = detect_hierarchy(V2), detect_hierarchy(V1)
    assert (v2.base, v2.files, v2.controllers()) == (V2, V2_FILES, ("",))
    assert (v1.files, v1.controllers()) == (V1_FILES, ("cpuacct", "cpu", "memory", "blkio"))
    assert v1.usage_file().names == ("memory.usage_in_bytes",) and v2.usage_file().names == ("memory.current",)
    with pytest.raises(FileNotFoundError, match="no cgroup v1 or v2 hierarchy"):
        detect_hierarchy(tmp_path)
