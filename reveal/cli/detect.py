"""`reveal detect`: offline detection over a recorded table (CSV, Parquet or the agent's Avro file)."""

from __future__ import annotations

import sys

from reveal.cli.options import add_engine_options, engine_settings, existing_file, output_file


def windows_output(text: str) -> str:
    """'-' (standard output), or a .csv or .jsonl file in a folder that exists."""
    return text if text == "-" else output_file(".csv", ".jsonl")(text)


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
    add_engine_options(parser, warmup=False)
    parser.set_defaults(handler=handle)


def handle(args) -> int:
    from stream_jobs.offline.output import write_windows
    from stream_jobs.offline.runner import detect
    from stream_jobs.offline.tables import TableError, load_table
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


def _report_repairs(path: str, repairs: dict) -> None:
    done = {kind: count for kind, count in repairs.items() if count}
    if done:
        print(f"{path}: repaired " + ", ".join(f"{count} {kind.replace('_', ' ')}" for kind, count in done.items()),
              file=sys.stderr)
