"""Which reported incident detects which injected fault, as an operator would judge it (scoring.py counts them).

- A fault that starts in judged time is detected by an incident on its host that *opens* between the fault's start
  and DETECTION_GRACE_S after its end; the delay runs from the fault's start.
- A fault already in force when judging starts (from the start of the run, or begun before judged time) is detected
  only by an incident on its host that opens after the fault began and no later than FROM_START_WITHIN_S after
  judging starts (peers compare hosts while each learns its own baseline, so a difference may be told before); the
  delay runs from the start of judging, and is 0 for one told before.
- A configuration difference (a setting fault) is detected only by an incident of kind "configuration" that names
  one of the setting's channels, and once: a second such incident on the host is a false alert.
- An incident on another host that says it waits on the host of a fault in force when it opened is right (for
  precision), but detects nothing (for recall).

Times are ns since the epoch, as in truth.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from reveal.lab.setting_faults import SETTING_FAULTS
from reveal.lab.truth import FaultLabel, ReportedIncident

NS_PER_S = 1_000_000_000
DETECTION_GRACE_S = 10.0
FROM_START_WITHIN_S = 30.0
CONFIGURATION = "configuration"
SETTING_CHANNELS = {kind: fault.channel_prefixes for kind, fault in SETTING_FAULTS.items()}


@dataclass(frozen=True)
class JudgedTime:
    """The part of a run whose incidents are judged: from the end of its baseline to its end, on `hosts` hosts."""

    start_ns: int
    end_ns: int
    hosts: int

    def __post_init__(self):
        if self.hosts < 1:
            raise ValueError(f"hosts is {self.hosts}; a run has at least one host")
        if self.end_ns <= self.start_ns:
            raise ValueError(f"judged time ends ({self.end_ns}) before it starts ({self.start_ns})")

    @property
    def host_seconds(self) -> float:
        return self.hosts * (self.end_ns - self.start_ns) / NS_PER_S

    def holds(self, instant_ns: int) -> bool:
        return self.start_ns <= instant_ns <= self.end_ns


@dataclass(frozen=True)
class DetectionRules:
    """The rules of this module for one run: its judged time and the grace after a fault's end."""

    judged: JudgedTime
    grace_ns: int

    def in_force_at_start(self, fault: FaultLabel) -> bool:
        """Whether the fault was already in force when judging started."""
        return fault.from_start or fault.start_ns < self.judged.start_ns

    def interval(self, fault: FaultLabel) -> tuple[int, int]:
        """When an incident must open to detect the fault (ns, both ends included)."""
        if self.in_force_at_start(fault):
            return fault.start_ns, self.judged.start_ns + round(FROM_START_WITHIN_S * NS_PER_S)
        return fault.start_ns, fault.end_ns + self.grace_ns

    def interval_s(self, fault: FaultLabel) -> float:
        start_ns, end_ns = self.interval(fault)
        return (end_ns - start_ns) / NS_PER_S

    def delay_s(self, fault: FaultLabel, incident: ReportedIncident) -> float:
        """From the fault's start, or for one in force when judging started, from then (0 if told before)."""
        began_ns = self.judged.start_ns if self.in_force_at_start(fault) else fault.start_ns
        return max(incident.opened_ns - began_ns, 0) / NS_PER_S

    def detects(self, fault: FaultLabel, incident: ReportedIncident) -> bool:
        """Whether the incident opens on the fault's host in its interval (and, for a configuration difference,
        is a configuration incident naming the setting)."""
        start_ns, end_ns = self.interval(fault)
        return (incident.host == fault.host and start_ns <= incident.opened_ns <= end_ns
                and (fault.fault not in SETTING_CHANNELS or names_setting(incident, fault.fault)))

    def first_detecting(self, fault: FaultLabel, incidents: Sequence[ReportedIncident]) -> ReportedIncident | None:
        return min((i for i in incidents if self.detects(fault, i)), key=lambda i: i.opened_ns, default=None)

    def credited(self, fault: FaultLabel, incidents: Sequence[ReportedIncident]) -> list[int]:
        """Positions of the incidents that are right about the fault: every one that detects it, but for a
        configuration difference only the first (once per difference)."""
        detecting = [index for index, incident in enumerate(incidents) if self.detects(fault, incident)]
        if fault.fault in SETTING_CHANNELS:
            return sorted(detecting, key=lambda index: incidents[index].opened_ns)[:1]
        return detecting


def names_setting(incident: ReportedIncident, kind: str) -> bool:
    """Whether a configuration incident names one of the channels of a setting fault's kind."""
    return incident.kind == CONFIGURATION and any(channel.startswith(prefix) for channel in incident.channels
                                                  for prefix in SETTING_CHANNELS[kind])


def waits_on(fault: FaultLabel, incident: ReportedIncident) -> bool:
    """Whether an incident on another host says it waits on the fault's host while the fault is in force."""
    return (incident.waiting_on == fault.host and incident.host != fault.host
            and fault.start_ns <= incident.opened_ns <= fault.end_ns)
