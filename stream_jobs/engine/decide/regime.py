"""A workload starting or stopping is not an anomaly: the host's activity level (CPU busy %, or GPU utilisation)
holding its other side for `regime_hold_s` is one "regime" notice, and the host's findings are held back for
`settle_s` while its baseline is learned again. A burner or a stall shorter than the hold is a fault, which the
channel watch reports within seconds; the first regime a host settles in is adopted silently, since its start was not
seen. Between `idle_below_pct` and `busy_above_pct` the level is on neither side (hysteresis)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from stream_jobs.engine.decide.incidents import NS_PER_S, AlertEvent
from stream_jobs.engine.decide.settings import DecisionSettings


@dataclass
class _Regime:
    current: str | None = None
    candidate: str | None = None
    since_ns: int = 0
    last_window_id: int | None = None


class RegimeDetector:
    """Decides when a host's workload started or stopped from its activity level."""

    def __init__(self, hold_s: float = DecisionSettings.regime_hold_s,
                 idle_below: float = DecisionSettings.idle_below_pct,
                 busy_above: float = DecisionSettings.busy_above_pct):
        if not idle_below < busy_above or hold_s < 0:
            raise ValueError(f"idle_below {idle_below} must be < busy_above {busy_above}, hold_s {hold_s} ≥ 0")
        self.hold_ns = round(hold_s * NS_PER_S)
        self.idle_below, self.busy_above = idle_below, busy_above
        self._hosts: dict[str, _Regime] = defaultdict(_Regime)

    def observe(self, host: str, window_id: int, end_ns: int, level: float) -> str | None:
        """'workload started' or 'workload stopped' on the window that confirms a change, otherwise None."""
        regime = self._hosts[host]
        if regime.last_window_id is not None and window_id <= regime.last_window_id:
            return None
        contiguous = regime.last_window_id is None or window_id == regime.last_window_id + 1
        regime.last_window_id = window_id
        side = self._side(level)
        if side is None or side == regime.current:
            regime.candidate = None
            return None
        if side != regime.candidate or not contiguous:
            regime.candidate, regime.since_ns = side, end_ns
        if end_ns - regime.since_ns < self.hold_ns:
            return None
        previous, regime.current, regime.candidate = regime.current, side, None
        if previous is None:
            return None
        return "workload started" if side == "busy" else "workload stopped"

    def forget(self, host: str) -> None:
        self._hosts.pop(host, None)

    def current(self, host: str) -> str | None:
        """'busy', 'idle', or None while the host has not settled."""
        return self._hosts[host].current if host in self._hosts else None

    def _side(self, level: float) -> str | None:
        if level >= self.busy_above:
            return "busy"
        if level <= self.idle_below:
            return "idle"
        return None


class Settling:
    """The regime notices of many hosts, and how long each host's findings are held back after one."""

    def __init__(self, settle_s: float = DecisionSettings.settle_s):
        self.settle_ns = round(settle_s * NS_PER_S)
        self._until_ns: dict[str, int] = {}

    def regime_change(self, host: str, window_id: int, start_ns: int, end_ns: int, change: str) -> AlertEvent:
        """The notice of a workload change, born closed; the host's findings are held from here for `settle_s`."""
        self._until_ns[host] = end_ns + self.settle_ns
        return AlertEvent(f"{host}:{window_id}:regime", host, "closed", start_ns, end_ns, 0.0, "",
                          f"{change} on {host} at window {window_id}", "", "regime")

    def settling(self, host: str, end_ns: int) -> bool:
        """Whether the host's findings are still held back after a workload change."""
        return end_ns <= self._until_ns.get(host, -1)

    def forget(self, host: str) -> None:
        self._until_ns.pop(host, None)
