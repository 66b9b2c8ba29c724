"""InfiniBand and RoCE port counters, link rate and link state from /sys/class/infiniband."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from producers.collectors.base import Reading, SysfsFilesCollector
from producers.collectors.sysfs_names import numbered_directories
from producers.fast_read.persistent_file import PersistentFile
from schemas.agent_records import Channel

INFINIBAND = "class/infiniband"
# PortRcvData and PortXmitData count octets divided by four (IBA PortCounters).
DATA_COUNTERS = frozenset({"port_rcv_data", "port_xmit_data"})
# Faults and congestion rather than traffic: summed and watched for bursts downstream.
EVENT_COUNTERS = frozenset({
    "symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors", "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors", "port_xmit_discards", "port_xmit_constraint_errors", "port_rcv_constraint_errors",
    "local_link_integrity_errors", "excessive_buffer_overrun_errors", "VL15_dropped", "port_xmit_wait",
    "out_of_sequence", "packet_seq_err", "rnr_nak_retry_err", "local_ack_timeout_err", "implied_nak_seq_err",
    "duplicate_request", "np_cnp_sent", "rp_cnp_handled", "np_ecn_marked_roce_packets"})
# Traffic among the driver's hw_counters; any other hw counter (out_of_buffer, req_cqe_error, …) is an event.
_TRAFFIC = re.compile(r"(_data|_packets|_requests|_connect)$")
# hw_counters/lifespan is the counters' refresh period in ms, a setting rather than a counter.
_SETTINGS = frozenset({"lifespan"})


def counter_kind(name: str) -> str:
    """'event' for error and congestion counters, 'counter' for traffic."""
    if name in EVENT_COUNTERS:
        return "event"
    return "counter" if _TRAFFIC.search(name) else "event"


def counter_unit(name: str) -> str:
    """The unit of a port counter after scaling."""
    if name in DATA_COUNTERS:
        return "bytes"
    if name == "port_xmit_wait":  # ticks in which data was waiting but the link had no credit
        return "ticks"
    for suffix in ("packets", "requests"):
        if name.endswith(suffix):
            return suffix
    return "events"


class InfinibandCollector(SysfsFilesCollector):
    """ib.<counter>.<hca>_<port> for every file of ports/<p>/counters and hw_counters, ib.rate_gbps (static) and
    ib.state (gauge: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER).

    Data counters are scaled ×4 to bytes. A counter the port's performance agent cannot answer reads "N/A (no PMA)"
    and so NaN. Without extended counters (IBA PortCountersExtended, Linux >= 4.5) the data and packet counters are
    32 bits wide and stop at their maximum rather than wrap.
    """

    source = "/sys/class/infiniband/*/ports/*"
    default_interval_s = 0.1

    def __init__(self, procfs="/proc", sysfs="/sys"):
        super().__init__(procfs, sysfs)
        self._states: list[tuple[str, PersistentFile]] | None = None
        self._all_names: tuple[str, ...] = ()

    def discover(self):
        for device, port in infiniband_ports(self.sysfs / INFINIBAND):
            for path in port_counter_files(port):
                name = path.name
                yield (Channel(f"ib.{name}.{device}", "network", counter_kind(name), counter_unit(name), device),
                       path, 4.0 if name in DATA_COUNTERS else 1.0)
            yield Channel(f"ib.rate_gbps.{device}", "network", "static", "Gb/s", device), port / "rate", 1.0

    def read(self) -> Reading:
        counters = super().read()
        if self._states is None:
            self._states = self._state_files()
            self._all_names = counters.names + tuple(name for name, _ in self._states)
        states = np.fromiter((self._state(name, handle) for name, handle in self._states), dtype=np.float64,
                             count=len(self._states))
        return Reading(self._all_names, np.concatenate([counters.values, states]))

    def close(self) -> None:
        super().close()
        for _, handle in self._states or ():
            handle.close()

    def _state_files(self) -> list[tuple[str, PersistentFile]]:
        """The state file of every port, with its channel registered."""
        return [(self._remember(Channel(f"ib.state.{device}", "network", "gauge", "", device)),
                 PersistentFile(port / "state")) for device, port in infiniband_ports(self.sysfs / INFINIBAND)]

    def _state(self, name: str, handle: PersistentFile) -> float:
        """The number before the colon of '4: ACTIVE'; NaN when the file cannot be read or parsed."""
        try:
            return float(handle.read().split(b":")[0])
        except (OSError, ValueError) as error:
            self._warn_once(name, "%s: cannot read %s (%s); the channel reads NaN", self.source, handle.path, error)
            return float("nan")


def infiniband_ports(infiniband: Path) -> list[tuple[str, Path]]:
    """('<hca>_<port>', port directory) for every port of every HCA, in name and port order."""
    if not infiniband.is_dir():
        return []
    return [(f"{hca.name}_{port.name}", port) for hca in sorted(infiniband.iterdir())
            for port in numbered_directories(hca / "ports", "")]


def port_counter_files(port: Path) -> list[Path]:
    """The counter files of one port: counters/* then hw_counters/*, each in name order."""
    files = []
    for group in ("counters", "hw_counters"):
        if (port / group).is_dir():
            files += sorted(path for path in (port / group).iterdir() if path.name not in _SETTINGS)
    return files
