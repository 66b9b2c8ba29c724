"""`reveal sql`: run a query against Reveal's ClickHouse and print the result as a table."""

from __future__ import annotations

import json
import sys

from sinks.clickhouse import ClickHouseWriter, StorageError, data_dir_dsn
from stream_jobs.cli.options import DEFAULT_DATA_DIR, clickhouse_dsn


def register(commands) -> None:
    parser = commands.add_parser(
        "sql", help="query the stored frames, windows, anomalies and alerts",
        description="Run one SQL query in the 'reveal' database (tables: frames, catalogs, windows, anomalies, "
                    "alerts) and print the rows. Values are bound as parameters: write {name:Type} in the query "
                    "and pass --param name=value.")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--clickhouse", metavar="DSN", help="chdb:///path or http(s)://host:port")
    target.add_argument("--data-dir", metavar="DIR", help=f"embedded data folder (default: {DEFAULT_DATA_DIR})")
    parser.add_argument("--database", default="reveal", help="database (default: reveal)")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="a query parameter, repeatable")
    parser.add_argument("--format", choices=("table", "tsv", "jsonl"), default="table",
                        help="table for people, tsv or jsonl (one JSON object per row) for scripts (default: table)")
    parser.add_argument("query", help='for example "SELECT host, count() FROM windows GROUP BY host"')
    parser.set_defaults(handler=handle)


def handle(args) -> int:
    from stream_jobs.cli import CommandError

    dsn = clickhouse_dsn(args.clickhouse) if args.clickhouse else data_dir_dsn(args.data_dir or DEFAULT_DATA_DIR)
    parameters = {}
    for item in args.param:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise CommandError(f"--param {item!r} must look like NAME=VALUE")
        parameters[name] = value
    try:
        writer = ClickHouseWriter(dsn, args.database)
        columns, rows = writer.query(args.query, parameters or None)
    except StorageError as error:
        raise CommandError(str(error)) from None
    PRINTERS[args.format](columns, rows, sys.stdout)
    return 0


def print_table(columns, rows, out) -> None:
    """Rows as an aligned text table with a header and a row count."""
    cells = [[str(c) for c in columns]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    for index, row in enumerate(cells):
        print("  ".join(value.ljust(width) for value, width in zip(row, widths)).rstrip(), file=out)
        if index == 0:
            print("  ".join("-" * width for width in widths), file=out)
    print(f"({len(rows)} row{'s' if len(rows) != 1 else ''})", file=out)


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    text = str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def print_tsv(columns, rows, out) -> None:
    print("\t".join(columns), file=out)
    for row in rows:
        print("\t".join(str(v) for v in row), file=out)


def print_jsonl(columns, rows, out) -> None:
    for row in rows:
        print(json.dumps(dict(zip(columns, row)), default=str), file=out)


PRINTERS = {"table": print_table, "tsv": print_tsv, "jsonl": print_jsonl}
