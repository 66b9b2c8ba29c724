"""Lab scenarios: TOML files naming the hosts, the workloads, the faults and the seed of one run; suites are folders
of them.

    name = "loss-1pct"
    hosts = ["h1", "h2", "h3"]
    workloads = ["train", "input"]
    duration_s = 200
    baseline_s = 80          # clean lead-in the engine learns from; faults start after it
    warmup_s = 30            # before t = 0: the agents sample but publish nothing (their own start-up)
    phases = true            # evaluation passes, checkpoint writes and data-loader epochs between steps
    heterogeneous = false    # true: each rank calibrates its own work per step (ranks then differ on purpose)
    seed = 7

    [[fault]]
    kind = "packet_loss"
    host = "h2"
    start_s = 95
    duration_s = 25
    magnitude = 0.01

    [[fault]]
    kind = "congestion_control"
    host = "h3"
    from_start = true        # in force before the workloads start until the run ends, baseline included
    setting = "reno"         # a value that is not a number; only congestion_control takes one
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from reveal.lab import SUITES_DIR
from reveal.lab.fault_kinds import FAULTS
from reveal.lab.faults import FaultSpec

WORKLOADS = ("train", "infer", "input")
SCENARIO_KEYS = {"name", "description", "hosts", "workloads", "duration_s", "baseline_s", "warmup_s", "phases",
                 "heterogeneous", "seed", "fault"}
DEFAULT_WARMUP_S = 30.0
FAULT_KEYS = {"kind", "host", "start_s", "duration_s", "magnitude", "from_start", "setting"}


class ScenarioError(ValueError):
    """A scenario file that cannot be run; the message names the file, the key and what is allowed."""


@dataclass(frozen=True)
class Scenario:
    name: str
    hosts: tuple[str, ...]
    workloads: tuple[str, ...]
    duration_s: float
    baseline_s: float
    seed: int
    faults: tuple[FaultSpec, ...]
    description: str = ""
    source: str = ""
    warmup_s: float = DEFAULT_WARMUP_S
    phases: bool = True
    heterogeneous: bool = False

    @property
    def clean(self) -> bool:
        return not self.faults


def load_scenario(path: str | Path) -> Scenario:
    """A validated scenario from a TOML file."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ScenarioError(f"{path}: cannot read the scenario ({error})") from error
    return parse_scenario(data, str(path))


def parse_scenario(data: dict, source: str = "<scenario>") -> Scenario:
    """A validated scenario from parsed TOML; ScenarioError names the offending key."""
    _known_keys(data, SCENARIO_KEYS, source)
    hosts = tuple(_required(data, "hosts", list, source))
    if not 1 <= len(hosts) <= 8 or len(set(hosts)) != len(hosts) or not all(_host_name(h) for h in hosts):
        raise ScenarioError(f"{source}: hosts must be 1–8 distinct short names of letters and digits, got {hosts}")
    workloads = tuple(data.get("workloads", ["train"]))
    for workload in workloads:
        if workload not in WORKLOADS:
            raise ScenarioError(f"{source}: workloads: {workload!r} is not one of {', '.join(WORKLOADS)}")
    duration = float(_required(data, "duration_s", (int, float), source))
    baseline = float(data.get("baseline_s", min(80.0, duration)))
    if not 20 <= baseline <= duration:
        raise ScenarioError(f"{source}: baseline_s must lie between 20 and duration_s ({duration:g}), got {baseline:g}")
    faults = tuple(_fault(entry, index, hosts, baseline, duration, source)
                   for index, entry in enumerate(data.get("fault", [])))
    warmup = float(_optional(data, "warmup_s", (int, float), DEFAULT_WARMUP_S, source))
    if not 0 <= warmup <= 600:
        raise ScenarioError(f"{source}: warmup_s must lie between 0 and 600, got {warmup:g}")
    return Scenario(str(_required(data, "name", str, source)), hosts, workloads, duration, baseline,
                    int(data.get("seed", 0)), faults, str(data.get("description", "")), source, warmup,
                    _optional(data, "phases", bool, True, source),
                    _optional(data, "heterogeneous", bool, False, source))


def suite_scenarios(suite: str) -> list[Scenario]:
    """The scenarios of a built-in suite (a folder of TOML files), in file-name order."""
    folder = SUITES_DIR / suite
    available = sorted(p.name for p in SUITES_DIR.iterdir() if p.is_dir())
    if not folder.is_dir():
        raise ScenarioError(f"suite {suite!r} is not one of {', '.join(available)}")
    return [load_scenario(path) for path in sorted(folder.glob("*.toml"))]


def _fault(entry: dict, index: int, hosts: tuple[str, ...], baseline: float, duration: float,
           source: str) -> FaultSpec:
    where = f"{source}: fault[{index}]"
    _known_keys(entry, FAULT_KEYS, where)
    kind = _required(entry, "kind", str, where)
    if kind not in FAULTS:
        raise ScenarioError(f"{where}: kind {kind!r} is not one of {', '.join(FAULTS)}")
    host = _required(entry, "host", str, where)
    if host not in hosts:
        raise ScenarioError(f"{where}: host {host!r} is not one of the scenario's hosts {', '.join(hosts)}")
    from_start = _optional(entry, "from_start", bool, False, where)
    start, length = _from_start_interval(entry, duration, where) if from_start else \
        _scheduled_interval(entry, baseline, duration, where)
    magnitude, setting = _fault_values(entry, kind, where)
    return FaultSpec(kind, host, start, length, magnitude, from_start, setting)


def _from_start_interval(entry: dict, duration: float, where: str) -> tuple[float, float]:
    """A fault from the start holds for the whole run, so it gives no start or duration of its own."""
    for key in ("start_s", "duration_s"):
        if key in entry:
            raise ScenarioError(f"{where}: {key} cannot be given with from_start = true (the fault holds for the "
                                "whole run)")
    return 0.0, duration


def _scheduled_interval(entry: dict, baseline: float, duration: float, where: str) -> tuple[float, float]:
    start = float(_required(entry, "start_s", (int, float), where))
    length = float(_required(entry, "duration_s", (int, float), where))
    if start < baseline or start + length > duration or length <= 0:
        raise ScenarioError(f"{where}: it must start after baseline_s ({baseline:g}) and end by duration_s "
                            f"({duration:g}); it runs {start:g}–{start + length:g} s")
    return start, length


def _fault_values(entry: dict, kind: str, where: str) -> tuple[float, str]:
    """The magnitude and the setting, as the kind takes them: only a kind that takes a setting may give one, and
    its magnitude may be left out."""
    fault = FAULTS[kind]
    setting = _optional(entry, "setting", str, "", where)
    if "setting" in entry and not fault.takes_setting:
        takers = ", ".join(name for name, other in FAULTS.items() if other.takes_setting)
        raise ScenarioError(f"{where}: setting is only for {takers}, not {kind}")
    magnitude = float(_optional(entry, "magnitude", (int, float), 0, where) if fault.takes_setting
                      else _required(entry, "magnitude", (int, float), where))
    refusal = fault.refusal(magnitude, setting)
    if refusal:
        raise ScenarioError(f"{where}: {kind}: {refusal}")
    return magnitude, setting


def _known_keys(data: dict, allowed: set[str], where: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ScenarioError(f"{where}: unknown key {unknown[0]!r}; the keys are {', '.join(sorted(allowed))}")


def _required(data: dict, key: str, kind, where: str):
    if key not in data:
        raise ScenarioError(f"{where}: {key} is required")
    if not isinstance(data[key], kind) or isinstance(data[key], bool):
        raise ScenarioError(f"{where}: {key} has the wrong type ({type(data[key]).__name__})")
    return data[key]


def _optional(data: dict, key: str, kind, default, where: str):
    if key not in data:
        return default
    value = data[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ScenarioError(f"{where}: {key} has the wrong type ({type(value).__name__})")
    return value


def _host_name(name) -> bool:
    return isinstance(name, str) and name.isalnum() and len(name) <= 8
