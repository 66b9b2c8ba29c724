"""`reveal compare-windows`: agreement between two runs' anomaly windows, as `reveal detect` wrote them."""

from __future__ import annotations

import json

from reveal.cli.options import existing_file


def register(commands) -> None:
    compare = commands.add_parser(
        "compare-windows", help="agreement between two runs' anomaly windows (IoU, hit rates; paper §5.5)",
        description="Merge each run's flagged windows into intervals per host and print the length-based IoU and "
                    "the hit rates by count and by length, both ways, per host and overall.")
    compare.add_argument("run_a", type=existing_file, metavar="A", help="output of reveal detect (CSV or .jsonl)")
    compare.add_argument("run_b", type=existing_file, metavar="B", help="output of reveal detect (CSV or .jsonl)")
    compare.add_argument("--json", action="store_true", help="print the figures as JSON")
    compare.set_defaults(handler=handle)


def handle(args) -> int:
    from stream_jobs.offline.agreement import compare_runs
    from stream_jobs.offline.tables import TableError

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
