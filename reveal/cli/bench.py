"""`reveal bench …`: benchmarks that print figures against Reveal's goals."""

from __future__ import annotations

import math
import shutil

from reveal.bench.agent import GOALS, WARMUP_S, bench_agent
from reveal.cli.options import (bootstrap_servers, existing_folder, output_file, positive_count, positive_float,
                                positive_seconds, publish_every_seconds, writable_folder)


def register(commands) -> None:
    parser = commands.add_parser("bench", help="measure Reveal's cost and speed on this machine",
                                 description="Benchmarks that print figures next to Reveal's goals.")
    benches = parser.add_subparsers(dest="bench", required=True, metavar="BENCH")
    _register_agent(benches)
    _register_engine(benches)
    _register_pipeline(benches)
    _register_host_faults(benches)
    _register_field_ceiling(benches)
    _register_detect(benches)


def _register_agent(benches) -> None:
    agent = benches.add_parser(
        "agent", help="the agent's memory, CPU, jitter and bytes per channel-sample on this host",
        description="Sample this host for real at --interval for --duration seconds, publishing to the broker, "
                    "and print: channels, agent CPU as % of one core (the whole process, Kafka client threads included, and the "
                    "sampling thread alone), µs of CPU per channel-sample, tick jitter "
                    "p50/p99, bytes per channel-sample on the wire (Kafka, after compression, measured by the "
                    "client's statistics) and at rest (ClickHouse frames table after its codecs, measured in "
                    "system.parts_columns), the CPU per read of each source, and the kernel's floor: the CPU that "
                    "reading the same files bare on the same schedule costs, which no parser can remove (and within it "
                    "the wake-up floor: keeping the schedule with nothing to do). Then "
                    "`reveal agent` itself runs as its own process for --duration seconds after a warm-up: its "
                    "resident memory (median of one reading a second, and its peak) and its CPU, as a fleet pays "
                    "them (the DaemonSet's requests in infra/ follow from these).")
    agent.add_argument("--interval", type=positive_seconds, default=0.1, metavar="S",
                       help="sampling interval in seconds (default: 0.1)")
    agent.add_argument("--duration", type=positive_seconds, default=30.0, metavar="S",
                       help="seconds to sample (default: 30)")
    agent.add_argument("--warmup", type=positive_seconds, default=WARMUP_S, metavar="S",
                       help=f"seconds the agent runs unmeasured before each measured part: files opened, layouts "
                            f"cached, heap grown (default: {WARMUP_S:g})")
    agent.add_argument("--bootstrap", type=bootstrap_servers, default="127.0.0.1:9092", metavar="HOST:PORT",
                       help="Kafka broker to publish to (default: 127.0.0.1:9092; infra/kafka/start.sh)")
    agent.set_defaults(handler=handle_agent)


def _register_engine(benches) -> None:
    engine = benches.add_parser(
        "engine", help="µs per host-window for each engine stage, and memory per tracked host",
        description="Warm --hosts pipelines on synthetic hosts of --channels channels (3 s windows at 10 Hz), then "
                    "time one window through signals and derived metrics, features, the channel watch, each "
                    "detector and attribution, and report windows per second per core and memory per tracked host "
                    "(as warmed, and with the channel watch's history full).")
    engine.add_argument("--hosts", type=positive_count, default=4, metavar="N",
                        help="synthetic hosts tracked at once (default: 4)")
    engine.add_argument("--channels", type=positive_count, default=700, metavar="C",
                        help="channels per host (default: 700)")
    engine.set_defaults(handler=handle_engine)


def _register_pipeline(benches) -> None:
    pipeline = benches.add_parser(
        "pipeline",
        help="sustained channel-samples/s, alert latency, keeping up and memory per host through Kafka and workers",
        description="Replay --hosts synthetic hosts of --channels channels in real time (frames encoded beforehand, "
                    "published by a separate process in record batches of the size a fleet's agents send) through "
                    "the broker into --workers real Faust workers storing in chDB, with a step change on one host in ten late in the run (each on gauges of its own), and "
                    "print: channel-samples per "
                    "second stored over the steady part, anomaly and alert latency after their window closed "
                    "(p50/p99 over the run, where every host learns its baseline in the same second, and p99 for "
                    "windows that closed in the steady part: after the first quarter and after storage caught up "
                    "with publication once the baselines were learned and stayed within 2 s of it for 10 s, which "
                    "takes start_up_catch_up_s), how far "
                    "storage trails publication and whether the workers keep up, the "
                    "consumer group's commit lag, worker CPU, worker memory per "
                    "tracked host (growth over idle workers: the median of per-second samples over the steady part, "
                    "and its peak; without the memory the workers' embedded ClickHouse tracks for itself, read from "
                    "their /metrics, since a fleet's workers write to a ClickHouse server; and with it), how much worker memory grew over the steady part (median of its last fifth "
                    "against its first, and the same for the floor, which merges' transient peaks do not move; run "
                    "a long --duration at 70 % of capacity as a soak test), and bytes per channel-sample on Kafka "
                    "(after compression) and in ClickHouse (the frames table's compressed parts).")
    pipeline.add_argument("--hosts", type=positive_count, default=10, metavar="N",
                          help="synthetic hosts replayed (default: 10)")
    pipeline.add_argument("--channels", type=positive_count, default=700, metavar="C",
                          help="channels per host (default: 700)")
    pipeline.add_argument("--interval", type=positive_seconds, default=0.1, metavar="S",
                          help="each host's sampling interval in seconds (default: 0.1)")
    pipeline.add_argument("--duration", type=positive_seconds, default=60.0, metavar="S",
                          help="seconds of replay (default: 60)")
    pipeline.add_argument("--workers", type=positive_count, default=1, metavar="K",
                          help="workers in one consumer group (default: 1)")
    pipeline.add_argument("--bootstrap", type=bootstrap_servers, default="127.0.0.1:9092", metavar="HOST:PORT",
                          help="Kafka broker (default: 127.0.0.1:9092; infra/kafka/start.sh)")
    pipeline.add_argument("--publish-every", type=publish_every_seconds, default=1.0, metavar="S",
                          help="each host sends S seconds of frames as one message, as `reveal agent --publish-every` "
                               "does (default: 1, the agent's; 0: a message per frame)")
    pipeline.add_argument("--profile", type=output_file(), default="", metavar="FILE",
                          help="sample the first worker with py-spy over the steady part, write its collapsed stacks "
                               "to FILE and print where its time goes (needs py-spy and ptrace rights; default: no profile)")
    pipeline.set_defaults(handler=handle_pipeline)


def _register_host_faults(benches) -> None:
    faults = benches.add_parser(
        "host-faults", help="reveal run on this host against a CPU burner, a dd write burst, a 2 GiB allocation and "
                            "a fork storm, then a long clean stretch",
        description="Run Reveal embedded on this host (reveal run), let it learn --baseline seconds (30 is a cold "
                    "start), then make four faults one after another, each for --fault seconds with --gap seconds "
                    "between: a CPU burner (a busy process per core), dd writes synced to disk, a 2 GiB allocation "
                    "touched page by page and a fork storm; then leave the host alone for --clean seconds, "
                    "optionally with the live page open in headless Chromium (--open-page) and reveal sql and "
                    "reveal report pointed at the run every --visit-every seconds. Prints, per fault, whether an "
                    "alert opened within its interval plus --grace, the delay from its start, whether that is within "
                    "--within, the subsystem named, the claim and whether the claim's channel moved; and every false "
                    "alert: one that opened after the baseline outside those intervals. Takes about baseline + "
                    "4 × (fault + gap) + clean seconds.")
    faults.add_argument("--baseline", type=positive_seconds, default=600.0, metavar="S",
                        help="seconds of baseline before the first fault (default: 600)")
    faults.add_argument("--fault", type=positive_seconds, default=20.0, metavar="S", help="each fault's length "
                        "(default: 20)")
    faults.add_argument("--gap", type=positive_seconds, default=60.0, metavar="S",
                        help="quiet seconds after each fault (default: 60)")
    faults.add_argument("--clean", type=positive_seconds, default=1800.0, metavar="S",
                        help="clean seconds after the faults (default: 1800)")
    faults.add_argument("--grace", type=positive_seconds, default=5.0, metavar="S",
                        help="an alert opening this long after a fault's end still counts as finding it "
                             "(default: 5)")
    faults.add_argument("--within", type=positive_seconds, default=5.0, metavar="S",
                        help="a fault found this soon after its start is found in time (default: 5)")
    faults.add_argument("--no-faults", action="store_true",
                        help="make no faults: the whole judged time is clean (a quiet host's false alerts)")
    faults.add_argument("--visit-every", type=positive_seconds, default=None, metavar="S",
                        help="while the host is clean, point reveal sql and reveal report at the run every S "
                             "seconds (default: never)")
    faults.add_argument("--open-page", action="store_true",
                        help="keep the run's live page open in headless Chromium for the whole bench")
    faults.add_argument("--data-dir", type=writable_folder, default=None, metavar="DIR",
                        help="keep the run's embedded ClickHouse here (default: a temporary folder, removed)")
    faults.set_defaults(handler=handle_host_faults)


def handle_agent(args) -> int:
    result = bench_agent(args.bootstrap, args.interval, args.duration, warmup_s=args.warmup)
    figures = result.figures()
    print(f"\nagent on this host: {result.channels} channels, {result.frames} frames in {result.seconds:.1f} s, "
          f"{result.ticks_skipped} ticks skipped")
    print(f"{'figure':38s} {'measured':>10s} {'goal':>8s}")
    for name, value in figures.items():
        goal = GOALS.get(name)
        verdict = "" if goal is None else ("  ok" if value <= goal else "  MISSED")
        print(f"{name:38s} {value:10.3f} {'' if goal is None else f'≤ {goal:g}':>8s}{verdict}")
    above_floor = figures["cpu_percent_of_core"] - figures["kernel_floor_percent_of_core"]
    print(f"(kernel floor: {result.kernel_floor_files} files read bare on the agent's schedule; the agent's own "
          f"work above it is {above_floor:.3f} % of a core; of the floor, waking up on the schedule with nothing to "
          f"do takes {figures['wake_floor_percent_of_core']:.3f} %)")
    print("\nCPU per read, by source (µs):")
    for source, micros in sorted(result.per_source_cpu_us.items(), key=lambda item: -item[1]):
        print(f"  {source:28s} {micros:8.1f}")
    return 0


def _register_field_ceiling(benches) -> None:
    ceiling = benches.add_parser(
        "field-ceiling", help="the best any threshold on a window statistic scores on labelled field data",
        description="On a folder of labelled cases laid out as ../shared/bench/run.py reads them, score the "
                    "largest |z| over channels of each window's mean and spread against the baseline's, flagged above "
                    "each of several baseline quantiles, the way run.py scores (event recall, window precision, "
                    "composite F1; cases pooled), and print one JSON line per quantile. The best line bounds what "
                    "any calibration of one such limit can reach on that data. Then, per case at the 99th "
                    "percentile, the labelled events no window of which exceeds it and the share of clean windows "
                    "that do.")
    ceiling.add_argument("--data", type=existing_folder, required=True, metavar="DIR",
                         help="a folder with cases.json and per case baseline.csv, test.csv, labels.json "
                              "(e.g. ../shared/bench/asd)")
    ceiling.add_argument("--window", type=positive_seconds, default=3600.0, metavar="S",
                         help="window length, as run.py's --window (default: 1h)")
    ceiling.set_defaults(handler=handle_field_ceiling)


def handle_field_ceiling(args) -> int:
    import json
    from pathlib import Path

    from reveal.bench.field_ceiling import ceiling, load_cases, out_of_reach

    cases = load_cases(Path(args.data))
    for figures in ceiling(cases, args.window):
        print(json.dumps({key: float(value) for key, value in figures.items()}), flush=True)
    reach = out_of_reach(cases, args.window)
    for row in reach:
        print(json.dumps({"at_baseline_quantile": 0.99, **row}), flush=True)
    print(json.dumps({"at_baseline_quantile": 0.99, "events": sum(r["events"] for r in reach),
                      "events_never_above": sum(r["events_never_above"] for r in reach)}), flush=True)
    return 0


def _register_detect(benches) -> None:
    detect = benches.add_parser(
        "detect", help="windows per second `reveal detect` judges on a table of noise, timed as a user would",
        description="Write a seeded table of --channels Gaussian columns every second (--baseline-hours to learn "
                    "from, --hours to judge) as CSV in a temporary folder, run `reveal detect` on it with its "
                    "defaults (3 s windows every 1 s) and print the windows it judged, its wall-clock seconds from "
                    "start to exit (reading, learning, judging and writing) and windows per second.")
    detect.add_argument("--channels", type=positive_count, default=20, metavar="C",
                        help="columns of the table (default: 20)")
    detect.add_argument("--hours", type=positive_float, default=10.0, metavar="H",
                        help="hours of rows to judge, one a second (default: 10)")
    detect.add_argument("--baseline-hours", type=positive_float, default=2.0, metavar="H",
                        help="hours of rows to learn from (default: 2)")
    detect.set_defaults(handler=handle_detect)


def handle_detect(args) -> int:
    import tempfile
    from pathlib import Path

    from reveal.bench.detect_speed import GOAL_WINDOWS_PER_S, DetectFailed, bench_detect
    from reveal.cli import CommandError

    with tempfile.TemporaryDirectory(prefix="reveal-bench-detect-") as folder:
        print(f"judging {args.hours:g} h of {args.channels} columns at 1 s against {args.baseline_hours:g} h …",
              flush=True)
        try:
            speed = bench_detect(args.channels, args.hours, args.baseline_hours, Path(folder))
        except DetectFailed as failed:
            raise CommandError(f"the table it wrote was refused: {failed}") from None
    print(f"{'windows':36s} {speed.windows:10d}")
    print(f"{'seconds':36s} {speed.seconds:10.1f}")
    rate = speed.windows_per_second
    print(f"{'windows_per_second':36s} {rate:10.0f}  goal ≥ {GOAL_WINDOWS_PER_S:g}  "
          f"{'ok' if rate >= GOAL_WINDOWS_PER_S else 'MISSED'}")
    return 0


def handle_engine(args) -> int:
    from reveal.bench.engine import GOALS as ENGINE_GOALS, bench_engine

    result = bench_engine(args.hosts, args.channels)
    print(f"\nengine: {result.hosts} hosts of {result.channels} channels; {result.kept_channels} channels kept by "
          f"selection, {result.features} features per window")
    for stage, micros in result.micros.items():
        print(f"  {stage:34s} {micros:10.0f} µs")
    total_ms = result.total_ms
    print(f"{'total_ms_per_host_window':36s} {total_ms:10.2f}  goal ≤ {ENGINE_GOALS['total_ms_per_host_window']:g}"
          f"  {'ok' if total_ms <= ENGINE_GOALS['total_ms_per_host_window'] else 'MISSED'}")
    streak_ms, goal = total_ms + result.streak_micros / 1e3, ENGINE_GOALS["total_ms_per_host_window"]
    print(f"{'total_ms_while_a_channel_holds_a_streak':36s} {streak_ms:10.2f}  goal ≤ {goal:g}  "
          f"{'ok' if streak_ms <= goal else 'MISSED'}  (its seconds' medians, {result.streak_micros:.0f} µs, added)")
    print(f"{'host_windows_per_second_per_core':36s} {1e3 / total_ms:10.0f}")
    memory_mb = result.memory_bytes_per_host / 2**20
    print(f"{'memory_mb_per_host':36s} {memory_mb:10.2f}  goal ≤ {ENGINE_GOALS['memory_mb_per_host']:g}"
          f"  {'ok' if memory_mb <= ENGINE_GOALS['memory_mb_per_host'] else 'MISSED'}")
    full = memory_mb + (result.watch_history_bytes + result.baseline_to_fill_bytes) / 2**20
    print(f"{'memory_mb_per_host_history_full':36s} {full:10.2f}  goal ≤ {ENGINE_GOALS['memory_mb_per_host']:g}"
          f"  {'ok' if full <= ENGINE_GOALS['memory_mb_per_host'] else 'MISSED'}  (the channel watch's history, "
          f"{result.watch_history_bytes / 2**20:.2f} MB once full, and the rolling baseline's "
          f"{result.baseline_to_fill_bytes / 2**20:.2f} MB still to fill, added)")
    return 0


def handle_pipeline(args) -> int:
    from reveal.cli import CommandError
    from reveal.bench.pipeline import bench_pipeline
    from reveal.bench.pipeline_figures import (GOALS as PIPELINE_GOALS, PipelineBenchSettings,
                                               memory_steady_after_s)

    if args.hosts < 1 or args.channels < 3 or not 1 <= args.workers <= 6:
        raise CommandError(f"--hosts {args.hosts}, --channels {args.channels}, --workers {args.workers}: expected "
                           f"at least 1 host, at least 3 channels and 1 to 6 workers (the samples topic's partitions)")
    if args.profile and shutil.which("py-spy") is None:
        raise CommandError(f"--profile {args.profile}: py-spy is not installed (pip install py-spy), so the worker "
                           f"cannot be profiled; leave --profile out to run without a profile")
    settings = PipelineBenchSettings(args.hosts, args.channels, args.interval, args.duration, args.workers,
                                     args.bootstrap, profile_path=args.profile, publish_every_s=args.publish_every)
    result = bench_pipeline(settings)
    replay = result.replay
    print(f"\npipeline: {args.hosts} hosts × {args.channels} channels every {args.interval:g} s for "
          f"{args.duration:g} s through {args.workers} worker(s); {replay.frames} frames sent, "
          f"{result.frames_stored} stored; {len(result.anomaly_latencies_s)} anomalies, "
          f"{len(result.alert_latencies_s)} alerts opened, {len(result.peer_latencies_s)} peer anomalies (compared "
          f"once later windows arrive); replay at most {replay.max_behind_s * 1e3:.0f} ms behind schedule")
    print(f"{'figure':38s} {'measured':>14s} {'goal':>12s}")
    for name, value in result.figures().items():
        print(_figure_line(name, value, PIPELINE_GOALS.get(name)))
    print(f"{'FALLS BEHIND' if result.falls_behind else 'keeps up'}: frames are stored "
          f"{result.delay_start_s:.1f} s after publication at the start of the steady part, {result.delay_end_s:.1f} s "
          f"at its end ({result.delay_slope:+.3f} s per s over its last half). The commit lag "
          f"({result.lag_start} → {result.lag_end} records) also counts records the workers hold uncommitted while "
          f"windows, baselines or open incidents need them.")
    steady_after = memory_steady_after_s()
    if args.duration < steady_after:
        print(f"memory per host is measured short of its steady state: what a worker keeps of a host (its rolling "
              f"baseline and its channel watch's windows) is full {steady_after:.0f} s into the host's run; "
              f"--duration {math.ceil(steady_after) + 60} or more measures it full")
    if any(result.worker_exit_codes):
        print(f"workers exited with {result.worker_exit_codes}: one that did not stop within a minute of SIGTERM "
              f"(its event loop busy) was killed; what it had stored is counted")
    if result.profile is not None:
        _print_profile(result.profile)
    return 0


def _print_profile(profile) -> None:
    """Where the profiled worker's time goes: by package, by function's own time, by function with callees."""
    print(f"\nworker profile: {profile.samples} samples of running threads")
    for title, counts, top in (("by package (own time)", profile.packages, 12),
                               ("by function (own time)", profile.own, 15),
                               ("by function (with callees)", profile.inclusive, 25)):
        print(f"  {title}:")
        for name, share in profile.share(counts, top):
            print(f"    {100 * share:5.1f} %  {name}")


def _figure_line(name: str, value: float, goal: tuple[str, float] | None) -> str:
    """A figure next to its goal, with ok or MISSED."""
    if goal is None:
        return f"{name:38s} {value:14.3f}"
    sense, target = goal
    met = value >= target if sense == ">=" else value <= target
    return f"{name:38s} {value:14.3f} {(sense.replace('>=', '≥').replace('<=', '≤') + f' {target:g}'):>12s}" \
           f"  {'ok' if met else 'MISSED'}"


def handle_host_faults(args) -> int:
    import shutil

    from reveal.bench.host_faults import BenchPlan, print_result, run_bench
    from reveal.cli import CommandError

    browser = None
    if args.open_page:
        browser = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)),
                       None)
        if browser is None:
            raise CommandError("--open-page needs headless Chromium on PATH (chromium, chromium-browser or "
                               "google-chrome); install it or leave the option out")
    plan = BenchPlan(args.baseline, args.fault, args.gap, args.clean, args.grace, args.within, not args.no_faults,
                     args.visit_every or 0.0, browser)
    result = run_bench(plan, args.data_dir)
    print_result(result, args.clean)
    return 0
