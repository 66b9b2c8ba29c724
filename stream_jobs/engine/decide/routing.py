"""Which incident of its host each of a window's own departing channels goes to: one incident per fault, though one
fault reaches several subsystems within seconds (writes fill a disk queue, dirty pages and I/O wait)."""

from __future__ import annotations

from collections import defaultdict

from schemas.records import PersistedChannel
from stream_jobs.engine.decide.incidents import IncidentTracker


def cause_key(host: str, cause: str) -> str:
    return f"{host}/anomaly:{cause}"


class CauseRouter:
    """Routes each host's departing channels to the incidents of its causes (subsystems).

    A channel that joined an incident keeps going to it while it lasts; otherwise a channel goes to its cause's
    incident (open, pending, or closed and reopenable); a channel of a cause with none joins an incident of the host
    that began within `join_within` windows, and with none begins its cause's own incident. A channel that departs
    later, in a subsystem with no incident of its own, is a new cause. A closed incident takes back only the channels
    it held: others of its subsystem are a new fault's."""

    def __init__(self, incidents: IncidentTracker, join_within: int):
        self.incidents = incidents
        self.join_within = join_within
        self._began: dict[str, dict[str, int]] = defaultdict(dict)
        self._owner: dict[str, dict[str, str]] = defaultdict(dict)

    def routed(self, host: str, window_id: int, names: tuple[str, ...],
               causes: list[tuple[str, list[PersistedChannel]]]) -> dict[str, list[PersistedChannel]]:
        """Which cause's incident each departing channel of the window goes to."""
        live = {cause for cause, _ in causes if self.incidents.open_since_ns(cause_key(host, cause)) is not None}
        reopenable = {cause: self.incidents.reopenable(cause_key(host, cause)) for cause in live}
        began = {cause: window for cause, window in self._began[host].items() if cause in live}
        owner = {name: lead for name, lead in self._owner[host].items() if lead in live}
        routed: dict[str, list[PersistedChannel]] = defaultdict(list)
        for cause, mine in causes:
            for persisted in mine:
                name = names[persisted.index]
                resumes = cause in live and (reopenable.get(cause) is None or name in reopenable[cause])
                target = owner.get(name) or (cause if resumes else self._recent_lead(began, window_id))
                if target is None:
                    target, began[cause] = cause, window_id
                    live.add(cause)
                elif target != cause:
                    owner[name] = target
                routed[target].append(persisted)
        self._began[host], self._owner[host] = began, owner
        return routed

    def _recent_lead(self, began: dict[str, int], window_id: int) -> str | None:
        """The cause whose incident began last, if it began within `join_within` windows of this one."""
        recent = [(window, cause) for cause, window in began.items() if window_id - window <= self.join_within]
        return max(recent)[1] if recent else None

    def forget(self, host: str) -> None:
        self._began.pop(host, None)
        self._owner.pop(host, None)
