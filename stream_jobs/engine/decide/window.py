"""A window's finding: whether it is flagged and by what, how far out it lies, its evidence strongest first and the
channel it is named after.

In the calibrated mode a window is flagged when one of its channels has persisted outside its band (the channel
watch) or when the trio flags it (`ensemble_alerts`: each detector over the larger of its calibrated threshold and
its recent scores' 99th percentile, held as a channel's streak is and shown by the channel it points at; see
HostPipeline._held); the promise is shared between the two. In the paper's mode only the trio flags (§4.3: two of
three detectors over their baseline's thresholds). The evidence is the persisted channels, furthest first, else the
trio's strongest features, and the window is named after its lead (see naming.lead). A window the trio flagged has no
persisted channel: its evidence channels are its findings, so that its flags open incidents as the watch's do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from stream_jobs.engine.attribution import Contribution
from stream_jobs.engine.decide.naming import lead, naming_rank

CHANNELS = "channels"


@dataclass(frozen=True)
class WindowFinding:
    """What a judged window shows: flagged or not, by which detectors, how far out (in allowed distances), its
    evidence strongest first, the lead it is named after and that lead's subsystem."""

    flagged: bool
    detectors: tuple[str, ...]
    severity: float
    evidence: tuple[Contribution, ...]
    lead: Contribution | None
    subsystem: str


def window_finding(watched, trio, paper: bool, trio_alerts: bool, explain: bool,
                   channel_evidence: Callable[[], tuple[Contribution, ...]],
                   trio_evidence: Callable[[], tuple[Contribution, ...]],
                   subsystem_of: Mapping[str, str]) -> WindowFinding:
    """The finding of a window the channel watch (`watched`) and the trio (`trio`) judged; evidence is asked for only
    when the window is flagged or `explain`."""
    by_channels = watched.flagged and not paper
    by_trio = (paper or trio_alerts) and trio.flagged
    flagged = by_channels or by_trio
    evidence = channel_evidence() if by_channels else trio_evidence() if flagged or explain else ()
    named = evidence_lead(evidence, subsystem_of) if flagged and evidence else None
    return WindowFinding(flagged, ((CHANNELS,) if by_channels else ()) + (trio.flagged_by if by_trio else ()),
                         watched.severity if by_channels else trio.severity, evidence, named,
                         subsystem_of.get(named.channel, "") if named else "")


def evidence_lead(evidence: tuple[Contribution, ...], subsystem_of: Mapping[str, str]) -> Contribution:
    """The contribution a window is named and told after (see naming.lead)."""
    return lead(evidence, lambda c: naming_rank(c.channel, subsystem_of.get(c.channel, "")), lambda c: abs(c.z))
