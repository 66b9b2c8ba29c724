"""One naming rule, checked over every recorded lab run kept in tests/fixtures: no incident names a subsystem that none
of the channels it tells of belongs to."""

import re
from pathlib import Path

import pytest

from reveal.lab.ingest import load_run, replay_run
from schemas.channels import subsystem_for

RUNS = sorted(p.parent for p in (Path(__file__).resolve().parents[2] / "fixtures").rglob("run.json"))
# "…; disk.busy.vda mean z=+12.0, mem.Dirty residual z=-4.1; …": each told channel, its feature and z
TOLD = re.compile(r"([\w.:/@-]+) [\w-]+ z=[-+]")


def told_channels(summary: str) -> list[str]:
    return TOLD.findall(summary)


def test_the_told_channels_are_read_from_an_alerts_words():
    summary = "minor storage anomaly on h1 over 2 windows, peak severity 1.3 of 10; disk.busy.vda mean z=+12.0, " \
              "vm.numa_hit residual z=-89.9; looks like IRQ imbalance"
    assert told_channels(summary) == ["disk.busy.vda", "vm.numa_hit"]


@pytest.mark.parametrize("run_dir", RUNS, ids=[f"{p.parent.name}/{p.name}" for p in RUNS])
def test_no_incident_of_a_recorded_run_names_a_subsystem_none_of_its_evidence_belongs_to(run_dir):
    result = replay_run(load_run(run_dir), "calibrated")
    wrong = [(alert.alert_id, alert.state, alert.subsystem, alert.summary)
             for alert in result.host.alerts + result.cluster.alerts
             if alert.kind in ("anomaly", "peer") and told_channels(alert.summary)
             and alert.subsystem not in {subsystem_for(c) for c in told_channels(alert.summary)}]
    assert wrong == []
