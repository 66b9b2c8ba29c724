"""`reveal lab …`: fault-injection experiments with ground truth on this machine, and their scores."""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from reveal.cli.options import bootstrap_servers, fraction, positive_count, writable_folder

if TYPE_CHECKING:  # the scenario module is imported only by the commands that read scenarios
    from reveal.lab.scenario import Scenario


def register(commands) -> None:
    parser = commands.add_parser(
        "lab", help="fault-injection experiments: emulated hosts, injected faults, scores",
        description="Turn this machine into a small cluster (one network namespace and cgroup per host), run ML-like "
                    "workloads on it, inject known faults, record every host's telemetry with its agent, run the "
                    "engine over it and score what it found against the ground truth. Needs root, iproute2 and "
                    "nftables.")
    labs = parser.add_subparsers(dest="lab", required=True, metavar="ACTION")
    _register_run(labs)
    _register_rescore(labs)
    _register_score(labs)
    _register_ingest(labs)
    labs.add_parser("list", help="the built-in suites and their scenarios").set_defaults(handler=handle_list)
    labs.add_parser("clean", help="remove hosts, rules and cgroups an interrupted run left behind").set_defaults(
        handler=handle_clean)


def _register_run(labs) -> None:
    run = labs.add_parser("run", help="run a suite or scenario files, then score them",
                          description="Run each scenario (its hosts, workloads and faults, each fault measured "
                                      "while in force), replay its telemetry through the engine with calibrated and "
                                      "paper thresholds, store everything in RUN/clickhouse, score strictly and print "
                                      "the scores per run and for the whole set (also in OUT/scores.json). Built-in "
                                      "suites: " + ", ".join(_suites()) + ".")
    source = run.add_mutually_exclusive_group(required=True)
    source.add_argument("--suite", choices=_suites(), help="a built-in suite of scenarios")
    source.add_argument("--scenario", nargs="+", metavar="FILE.toml", help="scenario files to run")
    run.add_argument("--embedded", action="store_true",
                     help="no broker: agents record, and the lab replays the recordings through the same engine "
                          "(default: agents → Kafka → Faust worker → ClickHouse)")
    run.add_argument("--bootstrap", type=bootstrap_servers, default="127.0.0.1:9092", metavar="HOST:PORT",
                     help="Kafka broker of the real path (default: 127.0.0.1:9092; infra/kafka/start.sh)")
    run.add_argument("--out", type=writable_folder, default=None, metavar="DIR",
                     help="where run directories go (default: ./lab-runs/<suite>-<time>)")
    run.add_argument("--cpu-shares", type=_cpu_shares, default=1024, metavar="N",
                     help="CPU weight of the run's hosts and agents against other labs on this machine, as cgroup "
                          "cpu.shares (1024: a plain process; e.g. 65536 keeps a long soak unperturbed by a suite "
                          "run beside it; default: 1024)")
    run.add_argument("--f1-floor", type=fraction, default=None, metavar="F",
                     help="exit 1 when the set's strict F1 with calibrated thresholds falls below F")
    run.add_argument("--require-replay-match", action="store_true",
                     help="exit 1 when, for a run through Kafka, the replay of its recordings does not tell of exactly "
                          "the incidents the worker stored")
    run.set_defaults(handler=handle_run)


def _register_rescore(labs) -> None:
    rescore = labs.add_parser(
        "rescore", help="replay recorded runs through the engine as it is now and score them",
        description="Replay each run's recordings (RUN/telemetry) through the current engine, with the live host and "
                    "cluster stages and the run's own settings, much faster than real time; score the outputs "
                    "strictly against RUN/truth.jsonl with calibrated and paper thresholds; write RUN/scores.json "
                    "(a run's first, live scoring is kept as RUN/scores-live.json) and the set's scores.json; print "
                    "the tables. A RUN may also be a folder of runs (a suite's --out). Nothing else is changed.")
    rescore.add_argument("runs", nargs="+", metavar="RUN", help="a run directory, or a folder of them")
    rescore.add_argument("--jobs", type=positive_count, default=0, metavar="N",
                         help="replays run at once, one per run and threshold mode (default: one per CPU core)")
    rescore.add_argument("--out", type=writable_folder, default=None, metavar="DIR",
                         help="where the set's scores.json goes (default: the runs' common folder)")
    rescore.set_defaults(handler=handle_rescore)


def _register_score(labs) -> None:
    score = labs.add_parser("score", help="print the stored scores of runs and of all of them together",
                            description="Print the scores each run directory holds (RUN/scores.json) and those of "
                                        "all of them together (counts summed over runs), scoring any run not scored "
                                        "yet. A RUN may also be a folder of runs.")
    score.add_argument("runs", nargs="+", metavar="RUN", help="a run directory, or a folder of them")
    score.set_defaults(handler=handle_score)


def _register_ingest(labs) -> None:
    ingest = labs.add_parser("ingest", help="the first scoring of one run directory (lab run does it)",
                             description="Replay RUN/telemetry through the engine; for a run through Kafka compare "
                                         "the replay with the worker's stored outputs, for an embedded run store "
                                         "frames and outputs in RUN/clickhouse; store ground truth and scores there "
                                         "and write RUN/scores.json.")
    ingest.add_argument("run", metavar="RUN", help="a run directory")
    ingest.set_defaults(handler=handle_ingest)


def handle_run(args) -> int:
    from reveal.lab.runner import PipelineChoice, run_scenario

    from reveal.lab.scenario import load_scenario, suite_scenarios

    scenarios = suite_scenarios(args.suite) if args.suite else [load_scenario(p) for p in args.scenario]
    pipeline = PipelineChoice("" if args.embedded else args.bootstrap)
    if not pipeline.embedded:
        _check_broker(args.bootstrap)
    out = Path(args.out or f"lab-runs/{args.suite or 'scenarios'}-{time.strftime('%Y%m%d-%H%M%S')}")
    total = sum(s.warmup_s + s.duration_s for s in scenarios)
    _say(f"lab: {len(scenarios)} scenarios, about {total / 60:.1f} minutes of runs, "
         f"{'embedded' if pipeline.embedded else 'through Kafka at ' + args.bootstrap}; results in {out}")
    run_dirs = []
    for number, scenario in enumerate(scenarios, start=1):
        run_dir = run_scenario(scenario, out / f"{number:02d}-{scenario.name}", pipeline, progress=_say,
                               cpu_shares=args.cpu_shares)
        _ingest_in_child(run_dir)
        run_dirs.append(run_dir)
    f1 = _print_scores(run_dirs, f"suite {args.suite}" if args.suite else "scenarios", out)
    below_floor = args.f1_floor is not None and not _holds_floor(f1, args.f1_floor)
    unmatched = args.require_replay_match and not _replays_match(run_dirs)
    return 1 if below_floor or unmatched else 0


def _holds_floor(f1: float, floor: float) -> bool:
    _say(f"lab: strict F1 (calibrated) {f1:.3f} {'holds' if f1 >= floor else 'is BELOW'} the floor {floor:g}")
    return f1 >= floor


def _replays_match(run_dirs: list[Path]) -> bool:
    """Whether the replay of every run through Kafka told of exactly the incidents its worker stored."""
    unmatched = [run_dir.name for run_dir in run_dirs
                 if json.loads((run_dir / "scores.json").read_text()).get("replay_matches_live") is False]
    if unmatched:
        _say(f"lab: the replay of {', '.join(unmatched)} does not reproduce the live incidents")
    return not unmatched


def handle_rescore(args) -> int:
    from reveal.lab.ingest import THRESHOLD_MODES, rescore_runs

    run_dirs = expand_runs(args.runs)
    jobs = max(1, min(args.jobs or os.cpu_count() or 1, len(run_dirs) * len(THRESHOLD_MODES)))
    started = time.monotonic()
    _say(f"lab: rescoring {len(run_dirs)} runs with {len(THRESHOLD_MODES)} threshold modes, {jobs} replays at a time")
    rescore_runs(run_dirs, jobs, _say)
    _say(f"lab: rescored {len(run_dirs)} runs in {time.monotonic() - started:.1f} s")
    _print_scores(run_dirs, "rescored runs", Path(args.out) if args.out else _common_folder(run_dirs))
    return 0


def handle_score(args) -> int:
    run_dirs = expand_runs(args.runs)
    for run_dir in run_dirs:
        if not (run_dir / "scores.json").is_file():
            _ingest_in_child(run_dir)
    _print_scores(run_dirs, "runs", None)
    return 0


def handle_ingest(args) -> int:
    from reveal.lab.ingest import ingest_run

    ingest_run(Path(args.run), progress=_say)
    return 0


def expand_runs(paths: list[str]) -> list[Path]:
    """Run directories named directly, or found one level down in a suite's folder; ValueError for neither."""
    runs = []
    for path in map(Path, paths):
        if (path / "run.json").is_file():
            runs.append(path)
            continue
        inside = sorted(p.parent for p in path.glob("*/run.json")) if path.is_dir() else []
        if not inside:
            raise ValueError(f"{path} is neither a lab run directory (no run.json) nor a folder of runs")
        runs.extend(inside)
    return runs


def handle_list(args) -> int:
    from reveal.lab.scenario import suite_scenarios

    for suite in _suites():
        print(f"{suite}:")
        for scenario in suite_scenarios(suite):
            print(f"  {scenario.name:24s} {len(scenario.hosts)} hosts, {scenario.duration_s:>5.0f} s, "
                  f"{_fault_summary(scenario)}")
    return 0


def handle_clean(args) -> int:
    from reveal.lab.hosts import LabLock, remove_leftovers

    with LabLock(every_slot=True):
        removed = remove_leftovers()
    print("\n".join(removed) if removed else "nothing to remove")
    return 0


def _print_scores(run_dirs: list[Path], title: str, out: Path | None) -> float:
    """Each run's table, then the set's (counts summed), written to OUT/scores.json when out is given; returns the
    set's calibrated F1."""
    from reveal.lab.ingest import run_scores
    from reveal.lab.scoring import combine, run_score_record, score_table

    per_mode: dict[str, list] = {}
    for run_dir in run_dirs:
        summary, scores = run_scores(run_dir)
        print(f"\n{summary['scenario']} ({summary['run_id']}, {summary['outputs']} outputs, "
              f"{summary['hosts']} hosts, {summary['judged_s']:.0f} s judged){_agreement_text(summary)}:\n"
              f"{_effects_text(summary)}{score_table(summary['scores'])}")
        for mode, score in scores.items():
            per_mode.setdefault(mode, []).append(score)
    combined = {mode: combine(scores) for mode, scores in per_mode.items()}
    summaries = {mode: score.summary() for mode, score in combined.items()}
    print(f"\n{title}: {len(run_dirs)} runs together\n{score_table(summaries)}", flush=True)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "scores.json").write_text(json.dumps(
            {"runs": [str(run_dir) for run_dir in run_dirs], "scores": summaries,
             "counts": {mode: run_score_record(score) for mode, score in combined.items()}}, indent=2, default=float))
        _say(f"lab: the set's scores are in {out / 'scores.json'}")
    f1 = summaries.get("calibrated", {}).get("f1", math.nan)
    return 0.0 if math.isnan(f1) else f1


def _effects_text(summary: dict) -> str:
    """What the faults did, as the run's truth and telemetry show it, a line each."""
    from reveal.lab.effects import CounterRates

    lines = [f"  fault without effect (left out of recall): {name}" for name in summary.get("faults_without_effect", [])]
    lines += [f"  {CounterRates(**rates).describe()}" for rates in summary.get("fault_effects", [])]
    return "".join(line + "\n" for line in lines)


def _agreement_text(summary: dict) -> str:
    if "replay_matches_live" not in summary:
        return ""
    verdict = "matches" if summary["replay_matches_live"] else "DOES NOT match"
    return (f"; the replay {verdict} the live incidents ({summary['replayed_incidents']} replayed, "
            f"{summary['live_incidents']} live)")


def _common_folder(run_dirs: list[Path]) -> Path:
    return Path(os.path.commonpath([str(run_dir.resolve().parent) for run_dir in run_dirs]))


def _cpu_shares(text: str) -> int:
    value = positive_count(text)
    if not 2 <= value <= 262144:
        raise argparse.ArgumentTypeError(f"{text} is outside cgroup cpu.shares' 2–262144")
    return value


def _check_broker(bootstrap: str) -> None:
    from schemas.topics import BrokerUnavailable, ensure_topics

    try:
        ensure_topics({"bootstrap.servers": bootstrap}, timeout_s=10.0)
    except BrokerUnavailable as error:
        raise BrokerUnavailable(f"{error}; start one with infra/kafka/start.sh, or run with --embedded") from None


def _ingest_in_child(run_dir: Path) -> None:
    """Each run's ClickHouse is its own chDB folder, and one process can hold only one: ingest in a child."""
    done = subprocess.run([sys.executable, "-m", "reveal.cli", "lab", "ingest", str(run_dir)])
    if done.returncode != 0:
        raise ValueError(f"ingesting {run_dir} failed (exit {done.returncode}); see the lines above")


def _suites() -> list[str]:
    from reveal.lab import SUITES_DIR

    return sorted(p.name for p in SUITES_DIR.iterdir() if p.is_dir())


def _fault_summary(scenario: Scenario) -> str:
    if scenario.clean:
        return "clean"
    return ", ".join(f"{f.kind} {f.setting or f'{f.magnitude:.10g}'} on {f.host}"
                     + (" from the start" if f.from_start else "") for f in scenario.faults)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
