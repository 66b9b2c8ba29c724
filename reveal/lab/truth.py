"""Ground truth of a lab run (what was injected, where and when) and what the pipeline reported, as plain records.

A run directory holds `truth.jsonl` (one FaultLabel per line) beside the pipeline's outputs; scoring compares the
two without knowing how either was produced.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from schemas.channels import SUBSYSTEMS


@dataclass(frozen=True)
class FaultLabel:
    """One injected fault: kind, host, the interval it was active (ns since the epoch), the subsystem it hits, its
    magnitude in the fault's own unit (loss fraction, CPU workers, bytes, Mbit/s, …), and what it measurably did:
    whether it took effect, the counters that show it, and for packet loss the cumulative drops over time. A fault
    from the start was put in force before the workloads started (before the run's t = 0); `setting` is the value
    of a fault that is not a number (a congestion control algorithm)."""

    fault: str
    host: str
    start_ns: int
    end_ns: int
    subsystem: str
    magnitude: float
    description: str = ""
    took_effect: bool = True
    effect: dict = field(default_factory=dict)
    drops_timeline: tuple = ()
    from_start: bool = False
    setting: str = ""

    def __post_init__(self):
        if self.end_ns <= self.start_ns:
            raise ValueError(f"fault {self.fault} on {self.host}: end_ns {self.end_ns} is not after start_ns "
                             f"{self.start_ns}")
        if self.subsystem not in SUBSYSTEMS:
            raise ValueError(f"fault {self.fault}: subsystem {self.subsystem!r} is not one of {SUBSYSTEMS}")


@dataclass(frozen=True)
class ReportedIncident:
    """One incident the pipeline raised on a host (from its alerts): the interval of its anomalous windows, when it
    was raised (the end of the window that opened it), subsystems ranked by the evidence of its windows, most
    implicated first, the host it says it waits on (told on a peer of a faulty host), and the channels it names."""

    host: str
    start_ns: int
    end_ns: int
    opened_ns: int
    subsystems: tuple[str, ...]
    severity: float = 0.0
    kind: str = "anomaly"
    waiting_on: str = ""
    channels: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReportedWindow:
    """One judged host-window: its interval and whether it was flagged."""

    host: str
    start_ns: int
    end_ns: int
    flagged: bool


@dataclass(frozen=True)
class RetransmissionVerdict:
    """The cluster stage's classification of retransmissions in one host-window: 'workload-intrinsic' (part of the
    job, seen across its hosts), 'fault-induced' (this host alone) or 'none' (no retransmissions to speak of)."""

    host: str
    start_ns: int
    end_ns: int
    category: str


@dataclass
class RunOutputs:
    """What one pipeline configuration reported for a run."""

    incidents: list[ReportedIncident] = field(default_factory=list)
    windows: list[ReportedWindow] = field(default_factory=list)
    retransmissions: list[RetransmissionVerdict] = field(default_factory=list)


def write_truth(path: str | Path, labels: list[FaultLabel]) -> None:
    Path(path).write_text("".join(json.dumps(asdict(label)) + "\n" for label in labels))


def read_truth(path: str | Path) -> list[FaultLabel]:
    """The labels of a truth.jsonl file; a malformed line is an error naming its number."""
    labels = []
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            record["drops_timeline"] = tuple(tuple(sample) for sample in record.get("drops_timeline", ()))
            labels.append(FaultLabel(**record))
        except (ValueError, TypeError) as error:
            raise ValueError(f"{path}:{number}: not a fault label ({error})") from error
    return labels
