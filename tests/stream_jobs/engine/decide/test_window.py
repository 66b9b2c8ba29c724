"""A window's finding: flagged by the watch in the calibrated mode, by the trio in the paper's, named after its lead."""

from dataclasses import dataclass

from stream_jobs.engine.attribution import Contribution
from stream_jobs.engine.decide.window import CHANNELS, evidence_lead, window_finding

SUBSYSTEMS = {"cpu.busy.cpu0": "cpu", "mem.used": "memory", "vm.pgreuse": "memory", "disk.busy.vda": "storage"}


@dataclass(frozen=True)
class Watched:
    flagged: bool
    severity: float = 3.0


@dataclass(frozen=True)
class Trio:
    flagged: bool
    flagged_by: tuple[str, ...] = ("zscore", "isolation_forest")
    severity: float = 1.4


def evidence(*pairs) -> tuple[Contribution, ...]:
    return tuple(Contribution(channel, "mean", 0.0, 0.0, 1.0, z) for channel, z in pairs)


CHANNEL_EVIDENCE = evidence(("cpu.busy.cpu0", 40.0), ("mem.used", 12.0))
TRIO_EVIDENCE = evidence(("disk.busy.vda", 9.0))


def finding(watched, trio, paper=False, trio_alerts=False, explain=False):
    return window_finding(watched, trio, paper, trio_alerts, explain, lambda: CHANNEL_EVIDENCE, lambda: TRIO_EVIDENCE,
                          SUBSYSTEMS)


def test_the_calibrated_mode_flags_by_the_watch_and_the_paper_s_by_the_trio_alone():
    calibrated = finding(Watched(True), Trio(True))
    assert (calibrated.flagged, calibrated.detectors, calibrated.severity) == (True, (CHANNELS,), 3.0)
    assert calibrated.evidence == CHANNEL_EVIDENCE
    paper = finding(Watched(True), Trio(True), paper=True)
    assert (paper.flagged, paper.detectors, paper.severity, paper.evidence) == \
        (True, ("zscore", "isolation_forest"), 1.4, TRIO_EVIDENCE)
    assert CHANNELS not in paper.detectors and paper.subsystem == "storage"
    assert not finding(Watched(False), Trio(True)).flagged and not finding(Watched(True), Trio(False), True).flagged
    assert finding(Watched(False), Trio(True), trio_alerts=True).detectors == ("zscore", "isolation_forest")


def test_an_unflagged_window_is_explained_only_when_asked_and_named_after_nothing():
    quiet = finding(Watched(False), Trio(False))
    assert (quiet.evidence, quiet.lead, quiet.subsystem) == ((), None, "")
    assert finding(Watched(False), Trio(False), explain=True).evidence == TRIO_EVIDENCE


def test_a_window_is_named_after_its_lead_a_state_before_cpu_time_within_the_yield():
    assert finding(Watched(True), Trio(False)).subsystem == "memory", "12 within 4 times the CPU time's 40"
    far = evidence(("cpu.busy.cpu0", 400.0), ("mem.used", 12.0), ("vm.pgreuse", 9e4))
    assert evidence_lead(far, SUBSYSTEMS).channel == "cpu.busy.cpu0"
    assert evidence_lead(evidence(("vm.pgreuse", 9e4)), SUBSYSTEMS).channel == "vm.pgreuse"
