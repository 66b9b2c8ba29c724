"""QdiscCollector against this machine's kernel: its own interfaces, and a network namespace entered through /proc/PID
whose interface a tbf shaper makes drop packets."""

import logging
import socket
import sys

import pytest

from producers.collectors import qdisc
from producers.collectors.net_settings import NetSettingsCollector
from producers.collectors.qdisc import CHANNELS, QdiscCollector
from producers.source_table import default_collectors
from tests.producers.collectors.namespace_hosts import run, veth_namespace

SHAPER = ("tbf", "rate", "1mbit", "burst", "2kb", "latency", "10ms")
# TEST-NET-1 addresses; the neighbour's made-up MAC makes the outside end discard what reaches it.
INSIDE_ADDRESS, NEIGHBOUR_ADDRESS, NEIGHBOUR_MAC = "192.0.2.1/24", "192.0.2.2", "02:00:00:00:00:02"
SPARES = ("spare0", "spare1")
FLOOD = ("import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
         f"for _ in range(300): s.sendto(bytes(1000), ('{NEIGHBOUR_ADDRESS}', 9))")


def read(procfs: str = "/proc") -> dict[str, float]:
    collector = QdiscCollector(procfs)
    try:
        return collector.collect()
    finally:
        collector.close()


def interfaces_of(values: dict[str, float]) -> set[str]:
    return {name.split(".", 2)[2] for name in values}


def test_every_interface_of_this_machine_but_loopback_has_the_four_channels():
    before = {name for _, name in socket.if_nameindex()} - {"lo"}
    collector = QdiscCollector()
    values = collector.collect()
    after = {name for _, name in socket.if_nameindex()} - {"lo"}
    assert before & after <= interfaces_of(values) <= before | after
    for interface in interfaces_of(values):
        for metric, (_, _, kind, unit) in CHANNELS.items():
            channel = collector.describe(f"{metric}.{interface}")
            assert (channel.subsystem, channel.kind, channel.unit, channel.device) == ("network", kind, unit, interface)
            assert values[channel.name] >= 0
    collector.close()


def test_the_source_is_read_every_second_after_the_network_settings():
    collectors = default_collectors(groups=("network",), net_procfs="/proc/4242")
    qdisc_collector = next(c for c in collectors if isinstance(c, QdiscCollector))
    assert isinstance(collectors[collectors.index(qdisc_collector) - 1], NetSettingsCollector)
    assert str(qdisc_collector.procfs) == "/proc/4242" and qdisc_collector.default_interval_s == 1.0


def test_without_pyroute2_the_source_is_unavailable_with_the_reason(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyroute2", None)
    collector = QdiscCollector()
    with pytest.raises(OSError, match="pyroute2 is not installed"):
        collector.collect()
    assert not collector.available()


@pytest.fixture
def shaped_host():
    """A namespace whose veth end, up and addressed with a permanent neighbour, sends through a 1 Mbit/s tbf."""
    with veth_namespace("rvq") as host:
        run("ip", "link", "set", host.outside, "up")
        inside = ("ip", "-n", host.namespace)
        run(*inside, "link", "set", host.inside, "up")
        run(*inside, "addr", "add", INSIDE_ADDRESS, "dev", host.inside)
        run(*inside, "neigh", "replace", NEIGHBOUR_ADDRESS, "lladdr", NEIGHBOUR_MAC, "dev", host.inside,
            "nud", "permanent")
        run("ip", "netns", "exec", host.namespace, "tc", "qdisc", "replace", "dev", host.inside, "root", *SHAPER)
        yield host


def flood(namespace: str) -> None:
    """Send 300 kB of UDP from inside the namespace at once: far more than the shaper's burst and queue hold."""
    run("ip", "netns", "exec", namespace, sys.executable, "-c", FLOOD)


def add_spare_pair(namespace: str) -> None:
    """A second veth pair, both ends inside the namespace and down (this kernel has no dummy interfaces); its names
    are the namespace's own, where the machine's interfaces are not seen."""
    run("ip", "-n", namespace, "link", "add", SPARES[0], "type", "veth", "peer", "name", SPARES[1])


def test_a_shaper_dropping_a_namespace_s_packets_shows_there_and_not_in_the_own_namespace(shaped_host):
    drops, overlimits = f"net.qdisc_drops.{shaped_host.inside}", f"net.qdisc_overlimits.{shaped_host.inside}"
    collector = QdiscCollector(shaped_host.procfs)
    try:
        flood(shaped_host.namespace)
        first = collector.collect()
        flood(shaped_host.namespace)
        second = collector.collect()
    finally:
        collector.close()
    own = read()
    assert interfaces_of(first) == interfaces_of(second) == {shaped_host.inside}
    assert first[drops] > 0 and first[overlimits] > 0
    assert second[drops] > first[drops] and second[overlimits] > first[overlimits]  # cumulative, not rates
    assert own[f"net.qdisc_drops.{shaped_host.outside}"] == own[f"net.qdisc_overlimits.{shaped_host.outside}"] == 0
    assert shaped_host.inside not in interfaces_of(own)


def test_an_interface_that_vanishes_costs_only_its_own_channels(shaped_host):
    add_spare_pair(shaped_host.namespace)
    collector = QdiscCollector(shaped_host.procfs)
    try:
        with_spares = collector.collect()
        run("ip", "-n", shaped_host.namespace, "link", "del", "spare0")
        without = collector.collect()
    finally:
        collector.close()
    assert interfaces_of(with_spares) == {shaped_host.inside, *SPARES}
    assert without == {name: value for name, value in with_spares.items() if name.split(".", 2)[2] not in SPARES}


def test_a_qdisc_without_statistics_costs_only_its_interface_s_channels_and_is_reported_once(shaped_host, monkeypatch,
                                                                                            caplog):
    real_dump = qdisc.dump_qdiscs

    def dump_without_the_shaper_s_statistics(route):
        dumped = real_dump(route)
        shaped = socket.if_nametoindex(shaped_host.inside)  # called inside the namespace
        for message in dumped:
            if message["index"] == shaped:
                message["attrs"] = [a for a in message["attrs"] if a[0] not in ("TCA_STATS2", "TCA_STATS")]
        return dumped

    add_spare_pair(shaped_host.namespace)
    monkeypatch.setattr(qdisc, "dump_qdiscs", dump_without_the_shaper_s_statistics)
    collector = QdiscCollector(shaped_host.procfs)
    try:
        with caplog.at_level(logging.WARNING):
            readings = [collector.collect(), collector.collect()]
    finally:
        collector.close()
    assert [interfaces_of(values) for values in readings] == [set(SPARES), set(SPARES)]
    warnings = [r.getMessage() for r in caplog.records if "cannot read the qdisc statistics" in r.getMessage()]
    assert len(warnings) == 1 and shaped_host.inside in warnings[0] and "tbf qdisc carries no statistics" in warnings[0]
