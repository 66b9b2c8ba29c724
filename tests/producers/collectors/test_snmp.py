"""SnmpCollector and NetstatCollector over /proc/net/snmp and /proc/net/netstat captured from a Linux 6.x VM."""

from producers.collectors.snmp import NetstatCollector, SnmpCollector


def test_snmp_reads_tcp_retransmissions_as_events(procfs):
    collector = SnmpCollector(procfs)
    values = collector.collect()
    assert "snmp.Tcp.RetransSegs" in values
    assert collector.describe("snmp.Tcp.RetransSegs").kind == "event"
    assert collector.describe("snmp.Tcp.CurrEstab").kind == "gauge"
    assert collector.describe("snmp.Tcp.RtoMin").kind == "static"
    assert values["snmp.Tcp.MaxConn"] == -1.0


def test_netstat_reads_the_nstat_retransmission_view(procfs):
    collector = NetstatCollector(procfs)
    values = collector.collect()
    for field in ("TCPLostRetransmit", "TCPTimeouts", "TCPSynRetrans", "ListenDrops"):
        assert f"snmp.TcpExt.{field}" in values
        assert collector.describe(f"snmp.TcpExt.{field}").kind == "event"
    assert "snmp.IpExt.InOctets" in values


def test_octet_counters_count_bytes_and_traffic_counters_packets():
    from producers.collectors.snmp import _unit

    assert _unit("InOctets") == "bytes" and _unit("OutBcastOctets") == "bytes"
    assert _unit("InReceives") == "packets" and _unit("OutSegs") == "packets" and _unit("RetransSegs") == ""
    assert _unit("OutTransmits") == "packets" and _unit("TCPDelivered") == "packets"
    assert _unit("TCPOrigDataSent") == "packets" and _unit("TCPLostRetransmit") == ""
