"""`reveal detect` and `reveal compare-windows`: offline detection over recorded tables, and window agreement."""

from __future__ import annotations

import json
import sys

from reveal.cli.options import add_engine_options, engine_settings, existing_file, windows_output
from stream_jobs.offline.agreement import compare_runs
from stream_jobs.offline.output import write_windows
from stream_jobs.offline.runner import detect
from stream_jobs.offline.tables import TableError, load_table


def register(commands) -> None:
    parser = commands.add_parser(
        "detect", help="detect anomalies in a recorded table (CSV, Parquet or the agent's Avro file)",
        description="Window a recorded table per host, score each window with Z-score, Mahalanobis-in-PCA and "
                    "Isolation Forest, attribute flagged windows, compare hosts with their peers, and write one row "
                    "per host-window. Input: a 'timestamp' column (epoch seconds/ms/ns or ISO-8601), an optional "
                    "'host' column, one numeric column per metric (gauges; a column that only ever rises, resets "
                    "aside, is read as a raw counter and judged by its rate); or an Avro recording from 'reveal "
                    "collect'. Without --baseline the run is its own baseline (paper §4.3); either way every window of the "
                    "baseline is learned, so there is no warm-up to set.")
    parser.add_argument("--input", type=existing_file, required=True, metavar="FILE", help="the recording to analyse")
    parser.add_argument("--baseline", type=existing_file, metavar="FILE",
                        help="a clean recording with the same columns to learn from (default: the input itself)")
    parser.add_argument("--output", type=windows_output, default="-", metavar="FILE",
                        help="where the windows go: a .csv file, a .jsonl file (JSON lines), or - for CSV on standard "
                             "output (default: -)")
    add_engine_options(parser, warmup_windows=None)
    parser.set_defaults(handler=handle)

    compare = commands.add_parser(
        "compare-windows", help="agreement between two runs' anomaly windows (IoU, hit rates; paper §5.5)",
        description="Merge each run's flagged windows into intervals per host and print the length-based IoU and "
                    "the hit rates by count and by length, both ways, per host and overall.")
    compare.add_argument("run_a", type=existing_file, metavar="A", help="output of reveal detect (CSV or .jsonl)")
    compare.add_argument("run_b", type=existing_file, metavar="B", help="output of reveal detect (CSV or .jsonl)")
    compare.add_argument("--json", action="store_true", help="print the figures as JSON")
    compare.set_defaults(handler=handle_compare)


def handle(args) -> int:
    from reveal.cli import CommandError

    settings = engine_settings(args)
    try:
        table = load_table(args.input)
        baseline = load_table(args.baseline) if args.baseline else None
        _report_repairs(args.input, table.repairs)
        rows = detect(table, settings, baseline, progress=lambda line: print(line, file=sys.stderr))
    except TableError as error:
        raise CommandError(str(error)) from None
    write_windows(args.output, rows)
    flagged = sum(r["flagged"] for r in rows)
    print(f"{len(rows)} windows from {len(table.hosts)} hosts, {flagged} flagged"
          + (f"; written to {args.output}" if args.output != "-" else ""), file=sys.stderr)
    return 0


def handle_compare(args) -> int:
    from reveal.cli import CommandError

    try:
        figures = compare_runs(args.run_a, args.run_b)
    except (TableError, KeyError, ValueError) as error:
        raise CommandError(f"cannot read the window files: {error}") from None
    only_a, only_b = figures["hosts_only_in_a"], figures["hosts_only_in_b"]
    if not set(figures["hosts"]) - set(only_a) - set(only_b):
        raise CommandError(f"{args.run_a} and {args.run_b} share no host (A: {', '.join(only_a) or 'none'}; B: "
                           f"{', '.join(only_b) or 'none'}), so there is nothing to compare")
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"{'host':24s} {'IoU':>6s} {'hit A→B':>8s} {'hit B→A':>8s} {'len A→B':>8s} {'len B→A':>8s}")
    for host in only_a + only_b:
        print(f"{host:24s} only in {'A' if host in only_a else 'B'}: not compared")
    shared = [(h, m) for h, m in figures["hosts"].items() if h not in only_a and h not in only_b]
    for host, m in [*shared, ("overall", figures["overall"])]:
        print(f"{host:24s} {m['iou']:6.2f} {m['hit_by_count_a_to_b']:8.2f} {m['hit_by_count_b_to_a']:8.2f} "
              f"{m['hit_by_length_a_to_b']:8.2f} {m['hit_by_length_b_to_a']:8.2f}")
    return 0


def _report_repairs(path: str, repairs: dict) -> None:
    done = {kind: count for kind, count in repairs.items() if count}
    if done:
        print(f"{path}: repaired " + ", ".join(f"{count} {kind.replace('_', ' ')}" for kind, count in done.items()),
              file=sys.stderr)
