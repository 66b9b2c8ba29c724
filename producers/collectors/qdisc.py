"""Each network interface's queueing discipline counters (tc's drops, overlimits, requeues, backlog), so that a shaper
or policer dropping one host's packets (tbf, htb, fq) shows up as trouble that host has and its peers do not."""

from __future__ import annotations

import importlib
import socket
from typing import Any, Iterable

from producers.collectors.base import Collector
from producers.collectors.namespace_thread import NamespaceReader

TC_H_ROOT = 0xFFFFFFFF
# Each channel: its field in TCA_STATS2's TCA_STATS_QUEUE (struct gnet_stats_queue), its field in the older
# TCA_STATS (struct tc_stats, which has no requeues), its kind and unit.
CHANNELS = {
    "net.qdisc_drops": ("drops", "drop", "event", "packets"),
    "net.qdisc_overlimits": ("overlimits", "overlimits", "event", "packets"),
    "net.qdisc_requeues": ("requeues", None, "event", "packets"),
    "net.qdisc_backlog": ("backlog", "backlog", "gauge", "bytes"),
}


class QdiscCollector(Collector):
    """net.qdisc_drops, net.qdisc_overlimits, net.qdisc_requeues (cumulative) and net.qdisc_backlog of every
    interface but loopback, added up over the qdiscs at the interface's root (a root mq or htb already counts its
    children, so they are not added again).

    Netlink answers for the namespace its socket was made in, so given /proc/PID (it has ns/net) the socket is made
    and read on a thread that has entered that process's network namespace; otherwise on the calling thread. An
    interface whose statistics cannot be read costs only its own channels.
    """

    source = "rtnetlink qdisc dump"
    default_interval_s = 1.0

    def __init__(self, procfs="/proc", sysfs="/sys"):
        super().__init__(procfs, sysfs)
        self._netlink = NamespaceReader(self.procfs, "qdisc", open_route_socket)

    def collect(self) -> dict[str, float]:
        values = self._netlink.run(self._read_interfaces)
        if not values:
            raise OSError(f"{self.source}: no interface's queueing statistics are readable for {self.procfs}")
        return values

    def close(self) -> None:
        self._netlink.close()

    def _read_interfaces(self, route: Any) -> dict[str, float]:
        """The counters of every interface but loopback. The qdiscs are dumped before the interfaces are listed, so
        that a qdisc whose interface vanished in between is left out: its index is no longer listed."""
        roots = root_qdiscs(dump_qdiscs(route))
        values: dict[str, float] = {}
        for index, interface in socket.if_nameindex():
            if interface != "lo":
                self._read_interface(interface, roots.get(index, []), values)
        return values

    def _read_interface(self, interface: str, qdiscs: list, values: dict[str, float]) -> None:
        try:
            totals = summed_counters(qdiscs)
        except (ValueError, KeyError) as error:
            self._warn_once(f"interface:{interface}", "%s: cannot read the qdisc statistics of %s (%s); its channels "
                            "are left out", self.source, interface, error)
            return
        for metric, value in totals.items():
            kind, unit = CHANNELS[metric][2:]
            self._put(values, metric, interface, value, "network", kind, unit)


def open_route_socket() -> Any:
    """A pyroute2 IPRoute of the calling thread's namespace, imported now (the agent imports only what it uses) and
    subscribed to no events, which it would otherwise queue unread."""
    try:
        pyroute2 = importlib.import_module("pyroute2")
    except ImportError as error:
        raise OSError(f"pyroute2 is not installed ({error})") from error
    return pyroute2.IPRoute(groups=0)


def dump_qdiscs(route: Any) -> list:
    """Every qdisc of the namespace; OSError when the kernel refuses the dump."""
    errors = importlib.import_module("pyroute2.netlink.exceptions")
    try:
        return list(route.get_qdiscs())
    except errors.NetlinkError as error:
        raise OSError(error.code, f"the qdisc dump failed: {error}") from error


def root_qdiscs(qdiscs: Iterable) -> dict[int, list]:
    """Interface index → the qdiscs attached at its root (not ingress or clsact, not a child)."""
    roots: dict[int, list] = {}
    for qdisc in qdiscs:
        if qdisc["parent"] == TC_H_ROOT:
            roots.setdefault(qdisc["index"], []).append(qdisc)
    return roots


def summed_counters(qdiscs: list) -> dict[str, float]:
    """Channel metric → the root qdiscs' counters added up; zeros without one (a down interface's built-in noop
    qdisc is not dumped, and counts nothing)."""
    if not qdiscs:
        return dict.fromkeys(CHANNELS, 0.0)
    totals: dict[str, float] = {}
    for qdisc in qdiscs:
        for metric, value in queue_counters(qdisc).items():
            totals[metric] = totals.get(metric, 0.0) + value
    return totals


def queue_counters(qdisc: Any) -> dict[str, float]:
    """Channel metric → one qdisc's counter, from TCA_STATS2 or else TCA_STATS (Linux < 2.6.10 has only the latter,
    without requeues); ValueError when the qdisc carries neither."""
    queue = qdisc.get(("TCA_STATS2", "TCA_STATS_QUEUE"))
    if queue is not None:
        return {metric: float(queue[fields[0]]) for metric, fields in CHANNELS.items()}
    stats = qdisc.get("TCA_STATS")
    if stats is None:
        raise ValueError(f"its {qdisc.get('TCA_KIND')} qdisc carries no statistics")
    return {metric: float(stats[fields[1]]) for metric, fields in CHANNELS.items() if fields[1] is not None}
