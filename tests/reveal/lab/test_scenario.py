"""Scenario files: every built-in one loads, faults from the start and settings are read, and a mistake names the
file, the key and what is allowed."""

import pytest

from reveal.lab.fault_kinds import FAULTS, PERFORMANCE_FAULTS
from reveal.lab.runner import WORKER_IDLE_S, WORKLOAD_SETTLE_S
from reveal.lab.scenario import ScenarioError, load_scenario, parse_scenario, suite_scenarios
from reveal.lab.setting_faults import SETTING_FAULTS

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


def test_the_full_suite_covers_every_performance_fault_kind():
    kinds = {f.kind for s in suite_scenarios("full") for f in s.faults}
    assert kinds == set(PERFORMANCE_FAULTS)


def test_the_peers_suite_holds_one_host_unlike_five_peers_from_the_start_within_twenty_minutes():
    scenarios = suite_scenarios("peers")
    assert all(len(s.hosts) == 6 and s.workloads == ("train", "input") and s.phases for s in scenarios)
    assert all(f.from_start and f.duration_s == s.duration_s for s in scenarios for f in s.faults)
    assert len({s.seed for s in scenarios}) == len(scenarios) and all(s.description for s in scenarios)
    kinds = {f.kind for s in scenarios for f in s.faults}
    assert set(SETTING_FAULTS) | {"straggler", "packet_loss", "bandwidth_cap"} == kinds
    walls_s = [s.warmup_s + s.duration_s + WORKLOAD_SETTLE_S + WORKER_IDLE_S for s in scenarios]
    assert max(walls_s) <= 210 and sum(walls_s) < 20 * 60


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
    with pytest.raises(ScenarioError, match="suite 'huge' is not one of full, peers, quick, soak"):
        suite_scenarios("huge")


FROM_START = {"kind": "packet_loss", "host": "h2", "from_start": True, "magnitude": 0.01}
RENO = {"kind": "congestion_control", "host": "h2", "from_start": True, "setting": "reno"}


def test_a_fault_from_the_start_holds_for_the_whole_run():
    fault = parse_scenario({**VALID, "fault": [FROM_START]}).faults[0]
    assert fault.from_start and (fault.start_s, fault.duration_s) == (0.0, 120.0)
    assert not parse_scenario(VALID).faults[0].from_start


def test_a_setting_is_read_and_its_kind_needs_no_magnitude():
    fault = parse_scenario({**VALID, "fault": [RENO]}).faults[0]
    assert (fault.kind, fault.setting, fault.magnitude) == ("congestion_control", "reno", 0.0)
    mtu = parse_scenario({**VALID, "fault": [{**FROM_START, "kind": "mtu", "magnitude": 1400}]}).faults[0]
    assert (mtu.magnitude, mtu.setting) == (1400.0, "")


@pytest.mark.parametrize("fault, message", [
    ({**FROM_START, "start_s": 70}, "start_s cannot be given with from_start = true"),
    ({**FROM_START, "duration_s": 20}, "duration_s cannot be given with from_start = true"),
    ({**FROM_START, "from_start": "yes"}, "from_start has the wrong type"),
    ({**FROM_START, "setting": "reno"}, "setting is only for congestion_control, not packet_loss"),
    ({**RENO, "setting": "warp9"}, "congestion_control: setting 'warp9' is not one of this machine's congestion "
                                   r"controls \(.*reno"),
    ({key: value for key, value in RENO.items() if key != "setting"}, "setting is required"),
    ({**RENO, "setting": 3}, "setting has the wrong type"),
    ({**FROM_START, "kind": "mtu", "magnitude": 1400.5}, "mtu: magnitude must be a whole number of bytes from 68"),
    ({**FROM_START, "kind": "tx_queue_len", "magnitude": 0}, "tx_queue_len: magnitude must be a whole number of "
                                                             "packets from 1"),
    ({"kind": "tcp_buffers", "host": "h2", "from_start": True}, "magnitude is required"),
])
def test_from_start_and_setting_mistakes_name_the_key(fault, message):
    with pytest.raises(ScenarioError, match=r"fault\[0\]: .*" + message) as raised:
        parse_scenario({**VALID, "fault": [fault]})
    assert "\n" not in str(raised.value)
