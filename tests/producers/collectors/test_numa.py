"""NumaCollector over a hand-built two-node host, this host's /sys, an empty root and garbage node files."""

import errno
import math
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from producers.collectors.numa import NumaCollector
from producers.fast_read.persistent_file import PersistentFile
from tests.conftest import FIXTURES

LARGE = FIXTURES / "sysfs-large"
NODES = "devices/system/node"
NUMASTAT = ("numa_hit", "numa_miss", "numa_foreign", "interleave_hit", "local_node", "other_node")


def test_two_nodes_give_meminfo_and_numastat_channels_per_node():
    collector = NumaCollector(sysfs=LARGE)
    values = collector.collect()
    assert len(values) == 2 * (36 + 6)
    assert {collector.describe(name).device for name in values} == {"node0", "node1"}
    assert list(values)[0] == "numa.MemTotal.node0" and list(values)[-1] == "numa.other_node.node1"
    assert all(f"numa.{field}.node1" in values for field in NUMASTAT)


def test_kb_become_bytes_and_numastat_counts_pages():
    collector = NumaCollector(sysfs=LARGE)
    values = collector.collect()
    assert values["numa.MemTotal.node1"] == 264240732 * 1024.0
    assert values["numa.HugePages_Total.node0"] == 0.0
    numastat = dict(line.split() for line in (LARGE / NODES / "node1/numastat").read_text().splitlines())
    assert values["numa.numa_miss.node1"] == float(numastat["numa_miss"])
    total = collector.describe("numa.MemTotal.node0")
    assert (total.subsystem, total.kind, total.unit, total.device) == ("memory", "static", "bytes", "node0")
    assert collector.describe("numa.MemFree.node0").kind == "gauge"
    assert collector.describe("numa.HugePages_Free.node0").unit == "pages"
    miss = collector.describe("numa.numa_miss.node1")
    assert (miss.subsystem, miss.kind, miss.unit) == ("memory", "counter", "pages")


def test_names_tuple_is_the_same_object_while_nodes_are_unchanged():
    collector = NumaCollector(sysfs=LARGE)
    first = collector.read()
    assert collector.read().names is first.names


def test_an_unreadable_node_file_costs_only_its_own_channels(tmp_path):
    shutil.copytree(LARGE / NODES, tmp_path / NODES)
    (tmp_path / NODES / "node0/numastat").unlink()
    (tmp_path / NODES / "node0/numastat").mkdir()  # read() fails with EISDIR
    values = NumaCollector(sysfs=tmp_path).collect()
    assert len(values) == 2 * (36 + 6) - 6
    assert not any(name.startswith("numa.numa_") and name.endswith(".node0") for name in values)


def test_a_node_file_failing_after_it_was_read_reads_nan(monkeypatch):
    collector = NumaCollector(sysfs=LARGE)
    before = collector.read()
    read, fileno = PersistentFile.read, PersistentFile.fileno

    def removed_node(original):
        def failing(handle):
            if handle.path.parent.name == "node0" and handle.path.name == "numastat":
                raise OSError(errno.ENODEV, "No such device")
            return original(handle)
        return failing

    monkeypatch.setattr(PersistentFile, "read", removed_node(read))
    monkeypatch.setattr(PersistentFile, "fileno", removed_node(fileno))
    after = collector.read()
    assert after.names is before.names
    nan = {name for name, value in zip(after.names, after.values) if math.isnan(value)}
    assert nan == {f"numa.{field}.node0" for field in NUMASTAT}


def test_a_malformed_line_costs_only_its_own_channel(tmp_path):
    shutil.copytree(LARGE / NODES, tmp_path / NODES)
    collector = NumaCollector(sysfs=tmp_path)
    before = collector.collect()
    meminfo = tmp_path / NODES / "node1/meminfo"
    meminfo.write_text(meminfo.read_text().replace("MemFree:        169412155", "MemFree:        garbage"))
    after = collector.collect()
    assert set(before) - set(after) == {"numa.MemFree.node1"}
    assert after["numa.MemTotal.node1"] == before["numa.MemTotal.node1"]
    assert not any(math.isnan(value) for value in after.values())


def test_host_without_nodes_is_unavailable(tmp_path):
    assert not NumaCollector(sysfs=tmp_path).available()
    (tmp_path / NODES / "node0").mkdir(parents=True)  # a node whose files cannot be read
    assert not NumaCollector(sysfs=tmp_path).available()


def test_this_host_reads_every_node_or_says_it_has_none():
    if not Path("/sys/devices/system/node/node0/numastat").exists():
        assert not NumaCollector().available()
        return
    values = NumaCollector().collect()
    nodes = list(Path("/sys/devices/system/node").glob("node[0-9]*"))
    assert sum(name.startswith("numa.numa_hit.") for name in values) == len(nodes)
    assert values["numa.MemTotal.node0"] > 0
    assert not any(math.isnan(value) for value in values.values())


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory):
    root = tmp_path_factory.mktemp("sys")
    shutil.copytree(LARGE / NODES, root / NODES)
    return root


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet="Node 01:kBnuma_hitMemFree\t", max_size=40), max_size=8),
       st.sampled_from(["node0/meminfo", "node0/numastat"]))
def test_garbage_in_one_node_file_never_crashes_a_read(two_nodes, lines, relative):
    path = two_nodes / NODES / relative
    original = (LARGE / NODES / relative).read_bytes()
    collector = NumaCollector(sysfs=two_nodes)
    before = collector.collect()
    path.write_text("\n".join(lines))
    try:
        during = collector.read()
    finally:
        path.write_bytes(original)
    assert all(isinstance(v, float) for v in during.values) and len(during.names) == len(during.values)
    node1 = {name: value for name, value in zip(during.names, during.values) if name.endswith(".node1")}
    assert node1 == {name: value for name, value in before.items() if name.endswith(".node1")}
