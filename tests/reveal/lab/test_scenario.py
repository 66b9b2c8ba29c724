"""Scenario files: every built-in one loads, and a mistake names the file, the key and what is allowed."""

import pytest

from reveal.lab.faults import FAULTS
from reveal.lab.scenario import ScenarioError, load_scenario, parse_scenario, suite_scenarios

VALID = {"name": "s", "hosts": ["h1", "h2"], "workloads": ["train"], "duration_s": 120, "baseline_s": 60,
         "fault": [{"kind": "packet_loss", "host": "h2", "start_s": 70, "duration_s": 20, "magnitude": 0.01}]}


def test_a_valid_scenario_keeps_its_values():
    scenario = parse_scenario(VALID)
    assert scenario.hosts == ("h1", "h2") and scenario.baseline_s == 60 and not scenario.clean
    assert scenario.faults[0].kind == "packet_loss" and scenario.faults[0].magnitude == 0.01


def test_warmup_phases_and_heterogeneous_ranks_have_defaults_and_are_checked():
    scenario = parse_scenario(VALID)
    assert (scenario.warmup_s, scenario.phases, scenario.heterogeneous) == (30.0, True, False)
    chosen = parse_scenario({**VALID, "warmup_s": 90, "phases": False, "heterogeneous": True})
    assert (chosen.warmup_s, chosen.phases, chosen.heterogeneous) == (90.0, False, True)
    with pytest.raises(ScenarioError, match="warmup_s must lie between 0 and 600"):
        parse_scenario({**VALID, "warmup_s": 900})
    with pytest.raises(ScenarioError, match="phases has the wrong type"):
        parse_scenario({**VALID, "phases": "yes"})


@pytest.mark.parametrize("suite", ["quick", "full", "soak"])
def test_every_built_in_scenario_loads_and_the_suite_has_a_clean_run(suite):
    scenarios = suite_scenarios(suite)
    assert scenarios and any(s.clean for s in scenarios)
    assert all(f.kind in FAULTS for s in scenarios for f in s.faults)
    assert all(len(s.hosts) >= 6 for s in scenarios)


def test_the_full_suite_learns_ten_minute_baselines_and_the_soak_is_long_and_clean():
    assert all(s.baseline_s >= 600 and s.warmup_s > 0 for s in suite_scenarios("full"))
    soak = suite_scenarios("soak")
    assert all(s.clean for s in soak)
    assert sum((s.duration_s - s.baseline_s) * len(s.hosts) for s in soak) / 3600 >= 10


def test_the_full_suite_covers_every_fault_kind():
    kinds = {f.kind for s in suite_scenarios("full") for f in s.faults}
    assert kinds == set(FAULTS)


@pytest.mark.parametrize("change, message", [
    ({"hosts": ["h1", "h1"]}, "distinct"),
    ({"workloads": ["train", "render"]}, "'render' is not one of train, infer, input"),
    ({"baseline_s": 10}, "baseline_s must lie between 20"),
    ({"colour": "red"}, "unknown key 'colour'"),
    ({"duration_s": "long"}, "duration_s has the wrong type"),
])
def test_scenario_mistakes_name_the_key(change, message):
    with pytest.raises(ScenarioError, match=message):
        parse_scenario({**VALID, **change})


@pytest.mark.parametrize("fault_change, message", [
    ({"kind": "meteor"}, "kind 'meteor' is not one of packet_loss"),
    ({"host": "h9"}, "host 'h9' is not one of the scenario's hosts"),
    ({"start_s": 30}, "must start after baseline_s"),
    ({"duration_s": 100}, "end by duration_s"),
    ({"magnitude": None}, "magnitude"),
])
def test_fault_mistakes_name_the_fault_and_key(fault_change, message):
    fault = {**VALID["fault"][0], **fault_change}
    if fault["magnitude"] is None:
        del fault["magnitude"]
    with pytest.raises(ScenarioError, match=r"fault\[0\].*" + message):
        parse_scenario({**VALID, "fault": [fault]})


def test_an_unreadable_file_is_named(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text("name = [")
    with pytest.raises(ScenarioError, match="broken.toml: cannot read"):
        load_scenario(path)


def test_an_unknown_suite_lists_the_suites():
    with pytest.raises(ScenarioError, match="suite 'huge' is not one of full, quick, soak"):
        suite_scenarios("huge")
