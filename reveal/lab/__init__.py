"""The fault-injection lab: emulated hosts on one machine, ML-like workloads, injected faults with ground truth, and
the scores of what the pipeline found."""

__all__ = [
    "effects", "faults", "hosts", "ingest", "replay", "runner", "scenario", "scoring", "truth", "workloads"
]
