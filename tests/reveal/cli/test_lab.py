"""`reveal lab`: run directories named directly or found in a suite's folder, anything else named; the suites listed
with their scenarios; and the CPU shares a run may ask for."""

import argparse

import pytest

from reveal.cli.lab import _cpu_shares, expand_runs, handle_list
from reveal.lab.scenario import suite_scenarios
from tests.reveal.lab.runs import recorded_run


def test_a_folder_of_runs_is_expanded_and_anything_else_is_named(tmp_path):
    run_dir = recorded_run(tmp_path / "suite" / "01-synthetic", seconds=20)
    assert expand_runs([str(tmp_path / "suite")]) == [run_dir]
    assert expand_runs([str(run_dir)]) == [run_dir]
    with pytest.raises(ValueError, match="neither a lab run directory"):
        expand_runs([str(tmp_path)])


def test_every_suite_is_listed_with_each_scenario_its_hosts_and_faults(capsys):
    assert handle_list(None) == 0
    listed = capsys.readouterr().out
    for suite in ("quick", "full", "soak"):
        assert f"{suite}:\n" in listed
        for scenario in suite_scenarios(suite):
            assert f"  {scenario.name:24s} {len(scenario.hosts)} hosts" in listed
    assert " clean\n" in listed and " on h" in listed


def test_cpu_shares_lie_within_what_cgroups_accept():
    assert _cpu_shares("2") == 2 and _cpu_shares("262144") == 262144
    for text in ("1", "262145"):
        with pytest.raises(argparse.ArgumentTypeError, match="2–262144"):
            _cpu_shares(text)
