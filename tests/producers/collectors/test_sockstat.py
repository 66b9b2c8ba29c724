"""SockStatCollector over /proc/net/sockstat captured from a Linux 6.x VM."""

from producers.collectors.sockstat import SockStatCollector


def test_sockstat_pairs_become_gauges(procfs):
    values = SockStatCollector(procfs).collect()
    assert "sock.tcp_inuse" in values and "sock.sockets_used" in values
