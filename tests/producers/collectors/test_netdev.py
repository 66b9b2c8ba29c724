"""NetDevCollector over /proc/net/dev captured from a Linux 6.x VM."""

from producers.collectors.netdev import NetDevCollector


def test_netdev_skips_loopback_by_default_and_marks_errors_as_events(procfs):
    collector = NetDevCollector(procfs)
    values = collector.collect()
    assert not any(name.endswith(".lo") for name in values)
    assert collector.describe("net.rx_bytes.eth0").kind == "counter"
    assert collector.describe("net.rx_drop.eth0").kind == "event"
    assert any(name.endswith(".lo") for name in NetDevCollector(procfs, include_loopback=True).collect())
