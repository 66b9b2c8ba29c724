"""The fault-injection lab: emulated hosts on one machine, ML-like workloads, injected faults with ground truth, and
the scores of what the pipeline found."""

from pathlib import Path

SUITES_DIR = Path(__file__).with_name("scenarios")  # the built-in suites, one folder of scenario files each

__all__ = [
    "SUITES_DIR", "cgroup_faults", "detection", "effects", "fault_kinds", "faults", "hosts", "ingest", "replay",
    "runner", "scenario", "scoring", "setting_faults", "truth", "workloads",
]
