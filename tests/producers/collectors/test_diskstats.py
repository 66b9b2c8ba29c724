"""DiskStatsCollector over /proc/diskstats captured from a Linux 6.x VM and an old kernel."""

from producers.collectors.diskstats import DiskStatsCollector
from tests.conftest import FIXTURES


def test_diskstats_excludes_loop_devices_and_reads_queue_depth_as_gauge(procfs):
    collector = DiskStatsCollector(procfs)
    values = collector.collect()
    assert not any(".loop" in name for name in values)
    assert collector.describe("disk.ios_in_progress.vda").kind == "gauge"


def test_diskstats_old_kernel_and_a_malformed_line_cost_only_that_device():
    values = DiskStatsCollector(FIXTURES / "proc-old-kernel").collect()
    assert values["disk.sectors_read.sda"] == 219714.0
    assert values["disk.reads_completed.nvme0n1"] == 91.0
    assert not any(name.endswith(".sdb") for name in values)
    assert "disk.discards_completed.sda" not in values
