"""VmStatCollector over /proc/vmstat captured from a Linux 6.x VM: page gauges, event counters and their subsystems."""

from producers.collectors.vmstat import VmStatCollector


def test_vmstat_separates_page_gauges_from_event_counters(procfs):
    collector = VmStatCollector(procfs)
    values = collector.collect()
    assert collector.describe("vm.nr_dirty").kind == "gauge"
    assert collector.describe("vm.nr_dirtied").kind == "counter"
    assert collector.describe("vm.pgmajfault").kind == "event"
    assert collector.describe("vm.pgfault").kind == "counter"
    assert values["vm.nr_free_pages"] > 0


def test_vmstat_puts_the_flow_of_block_io_through_the_page_cache_under_storage(procfs):
    collector = VmStatCollector(procfs)
    collector.collect()
    for name in ("vm.pgpgin", "vm.pgpgout", "vm.nr_dirtied", "vm.nr_written"):
        assert collector.describe(name).subsystem == "storage"
    for name in ("vm.nr_dirty", "vm.pgfault", "vm.nr_anon_pages", "vm.pswpout"):
        assert collector.describe(name).subsystem == "memory"
