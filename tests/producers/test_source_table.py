"""The source table: every source together on a hand-built large host (96 CPUs, 2 NUMA nodes, 4 GPUs, 2 Ethernet
NICs and 2 HCAs), the frame order, and the sources a group names."""

import pytest

from producers.collectors.cgroups import CgroupCollector
from producers.collectors.cpufreq import CpuFreqCollector
from producers.collectors.cpuidle import CpuIdleCollector
from producers.collectors.diskstats import DiskStatsCollector
from producers.collectors.infiniband import InfinibandCollector
from producers.collectors.msr import AperfMperfCollector
from producers.collectors.numa import NumaCollector
from producers.collectors.nvml import NvmlCollector, NvmlSlowCollector
from producers.collectors.perf import PerfCollector
from producers.collectors.procstat import ProcStatCollector
from producers.collectors.rapl import RaplCollector
from producers.collectors.thermal import ThermalCollector
from producers.registry import CollectorRegistry
from producers.source_table import FRAME_ORDER, SOURCE_GROUPS, default_collectors, validate_groups
from tests.conftest import FIXTURES
from tests.producers.collectors.fake_nvml import FakeNvml, two_h100s


def large_host_collectors():
    procfs, sysfs = FIXTURES / "proc-large", FIXTURES / "sysfs-large"
    proc_sources = [c for c in default_collectors(procfs, sysfs) if c.source.startswith("/proc")]
    sysfs_sources = [source(procfs, sysfs) for source in (CpuFreqCollector, CpuIdleCollector, RaplCollector,
                                                          ThermalCollector, NumaCollector, InfinibandCollector)]
    nvml = FakeNvml(two_h100s() + two_h100s())
    return proc_sources + sysfs_sources + [NvmlCollector(nvml=nvml), NvmlSlowCollector(nvml=nvml)]


def test_a_large_host_yields_well_over_700_channels_without_duplicates():
    registry = CollectorRegistry(large_host_collectors(), "big-host", "train-a", 0.1)
    values, changed = registry.sample(0)
    catalog = registry.catalog
    assert changed and len(values) == len(catalog.channels) > 2000
    by_subsystem = {s: sum(c.subsystem == s for c in catalog.channels) for s in ("cpu", "gpu", "memory", "network",
                                                                                  "storage")}
    assert all(count > 0 for count in by_subsystem.values()), by_subsystem
    assert {c.device for c in catalog.channels if c.subsystem == "gpu"} == {"gpu0", "gpu1", "gpu2", "gpu3"}
    assert len({c.device for c in catalog.channels if c.name.startswith("cpu.user.")}) == 97
    assert {"ens1f0np0", "ens1f1np1"} <= {c.device for c in catalog.channels if c.name.startswith("net.rx_bytes.")}


def test_the_large_host_catalog_is_stable_across_samples():
    registry = CollectorRegistry(large_host_collectors(), "big-host", "train-a", 0.1)
    registry.sample(0)
    version = registry.catalog.version
    for tick in range(1, 12):
        _, changed = registry.sample(tick)
        assert not changed
    assert registry.catalog.version == version


def test_every_source_is_in_exactly_one_group_and_in_the_frame_order():
    grouped = [source for sources in SOURCE_GROUPS.values() for source in sources]
    assert sorted(grouped, key=FRAME_ORDER.index) == list(FRAME_ORDER)


def test_groups_pick_their_sources_in_frame_order(tmp_path):
    collectors = default_collectors(str(tmp_path), str(tmp_path), groups=("storage", "cpu"))
    assert [type(c) for c in collectors] == [ProcStatCollector, DiskStatsCollector, CpuFreqCollector,
                                             AperfMperfCollector, CpuIdleCollector, PerfCollector]


def test_without_groups_every_source_is_made_once():
    assert [type(c) for c in default_collectors()] == list(FRAME_ORDER)


def test_network_sources_read_the_namespace_procfs_and_cgroups_get_their_parent():
    collectors = default_collectors("/proc", "/sys", "docker", ("network", "memory", "cgroups"), "/proc/4242")
    roots = {type(c).__name__: str(c.procfs) for c in collectors}
    assert roots == {"MemInfoCollector": "/proc", "VmStatCollector": "/proc", "NumaCollector": "/proc",
                     "PressureCollector": "/proc", "NetDevCollector": "/proc/4242", "SnmpCollector": "/proc/4242",
                     "NetstatCollector": "/proc/4242", "SockStatCollector": "/proc/4242",
                     "NetSettingsCollector": "/proc/4242", "QdiscCollector": "/proc/4242", "CgroupCollector": "/proc"}
    cgroups = next(c for c in collectors if isinstance(c, CgroupCollector))
    assert cgroups.parent == "docker"


def test_an_unknown_group_is_refused_naming_the_allowed_ones():
    assert validate_groups(("gpu", "cgroups")) == ("gpu", "cgroups")
    with pytest.raises(ValueError, match=r"source group 'gpus' is not one of cpu, interrupts, memory, network"):
        validate_groups(("cpu", "gpus"))
    with pytest.raises(ValueError, match="'disk'"):
        default_collectors(groups=("disk",))
