"""Every source together on a hand-built large host: 96 CPUs, 2 NUMA nodes, 4 GPUs, 2 Ethernet NICs and 2 HCAs."""

from producers.collectors.cpufreq import CpuFreqCollector
from producers.collectors.cpuidle import CpuIdleCollector
from producers.collectors.infiniband import InfinibandCollector
from producers.collectors.numa import NumaCollector
from producers.collectors.nvml import NvmlCollector, NvmlSlowCollector
from producers.collectors.rapl import RaplCollector
from producers.collectors.thermal import ThermalCollector
from producers.registry import CollectorRegistry
from producers.source_table import default_collectors
from tests.conftest import FIXTURES
from tests.producers.test_nvml import FakeNvml, two_h100s


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
