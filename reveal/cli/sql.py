"""`reveal sql`: run a query against Reveal's ClickHouse and print the result as a table."""

from __future__ import annotations

import argparse
import difflib
import json
import math
import re
import sys
import textwrap
from pathlib import Path

from sinks import retrospectives
from sinks.read_only import without_literals
from sinks.tables import CHANNEL_EXAMPLE, COLUMNS, TABLE_DESCRIPTIONS
from reveal.cli.options import DEFAULT_DATA_DIR, DSN_HELP, clickhouse_dsn, embedded_data_folder

_FORMAT_CLAUSE = re.compile(r"\bFORMAT\s+(\w+)\s*$", re.IGNORECASE)
_CHANNEL_VALUES = re.compile(r"channel_values\s*\(\s*name\s*=\s*(?:'([^']*)'|\{(\w+)\s*:\s*\w+\})\s*\)",
                             re.IGNORECASE)


def register(commands) -> None:
    parser = commands.add_parser(
        "sql", help="query the stored frames, windows, anomalies and incidents",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(
            "Run one SQL query in the 'reveal' database and print the rows. Values are bound as parameters: write "
            "{name:Type} in the query and pass --param name=value. The query only reads unless --write is given. A "
            "data folder that a reveal run is writing is queried through that run. --list shows the named "
            "retrospectives (which hosts were anomalous and why, a job's top evidence, a host against its peers, "
            "recurring incidents, week over week, retransmission verdicts, …) and --query NAME runs one.", 100),
        epilog=tables_epilog())
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--clickhouse", metavar="DSN", help=DSN_HELP)
    target.add_argument("--data-dir", metavar="DIR", help=f"embedded data folder (default: {DEFAULT_DATA_DIR})")
    parser.add_argument("--database", default="reveal", help="database (default: reveal)")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="a query parameter, repeatable")
    parser.add_argument("--write", action="store_true",
                        help="allow statements that change data (INSERT, ALTER, DROP, CREATE); without it the query "
                             "runs read-only")
    parser.add_argument("--format", choices=("table", "tsv", "jsonl"), default="table",
                        help="table for people, tsv or jsonl (one JSON object per row) for scripts (default: table)")
    parser.add_argument("--query", metavar="NAME", dest="named",
                        help="run the named retrospective NAME (see --list) with its parameters from --param")
    parser.add_argument("--list", action="store_true",
                        help="list the named retrospectives, what each answers and its parameters, and exit")
    parser.add_argument("query", nargs="?",
                        help='for example "SELECT host, count() FROM windows GROUP BY host"; not with --query')
    parser.set_defaults(handler=handle)


def tables_epilog() -> str:
    """The tables and what each holds, as `reveal sql --help` prints them."""
    lines = ["tables (and their columns):"]
    for name, text in TABLE_DESCRIPTIONS.items():
        lines.append(textwrap.fill(text, 100, initial_indent=f"  {name:<16}", subsequent_indent=" " * 18))
        lines.append(textwrap.fill(", ".join(COLUMNS[name]), 100, initial_indent=" " * 18 + "(",
                                   subsequent_indent=" " * 19) + ")")
    return "\n".join(lines + ["", "one channel: " + CHANNEL_EXAMPLE])


def handle(args) -> int:
    from reveal.cli import CommandError
    from sinks.clickhouse import StorageError

    if args.list:
        print_retrospectives(sys.stdout)
        return 0
    parameters = {}
    for item in args.param:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise CommandError(f"--param {item!r} must look like NAME=VALUE")
        parameters[name] = value
    statement, parameters = _statement(args, parameters)
    reader = open_reader(args)
    try:
        columns, rows = reader.query(statement, parameters or None)
        if not rows:
            _unknown_channels(reader, statement, parameters)
    except StorageError as error:
        raise CommandError(_explained(str(error))) from None
    finally:
        reader.close()
    PRINTERS[args.format](columns, rows, sys.stdout)
    sys.stdout.flush()  # a reader that left (BrokenPipeError) ends the command quietly in reveal.cli.main
    return 0


def _statement(args, parameters: dict[str, str]) -> tuple[str, dict[str, str]]:
    """The SQL to run and its bound parameters: the query given, or the named retrospective with its defaults."""
    from reveal.cli import CommandError

    if args.named and args.query:
        raise CommandError("give either a query or --query NAME, not both")
    if not args.named and not args.query:
        raise CommandError("give a query, --query NAME (a named retrospective) or --list")
    if not args.named:
        return _own_query(args.query), parameters
    try:
        retrospective = retrospectives.load(args.named)
        return retrospective.sql, retrospective.bound(parameters)
    except retrospectives.RetrospectiveError as error:
        raise CommandError(str(error)) from None


def _own_query(query: str) -> str:
    """The query as given, refused in one line where it cannot run: empty, or naming its own output format (the
    rows come back as data and --format prints them)."""
    from reveal.cli import CommandError

    statement = query.strip().rstrip(";").rstrip()
    if not statement:
        raise CommandError("the query is empty; give SQL such as \"SELECT host, count() FROM windows GROUP BY host\"")
    own_format = _FORMAT_CLAUSE.search(without_literals(statement))
    if own_format:
        raise CommandError(f"leave out 'FORMAT {own_format.group(1)}': the rows are printed by --format "
                           f"({', '.join(PRINTERS)})")
    return statement


def _unknown_channels(reader, statement: str, parameters: dict[str, str]) -> None:
    """A query of channel_values() that found nothing because no host ever had the channel is told so, with the
    nearest names, instead of printing no rows."""
    from reveal.cli import CommandError

    for literal, parameter in _CHANNEL_VALUES.findall(statement):
        name = literal or parameters.get(parameter, "")
        _, known = reader.query("SELECT DISTINCT arrayJoin(names) FROM catalogs")
        names = [row[0] for row in known]
        if name not in names:
            near = difflib.get_close_matches(name, names, n=3)
            raise CommandError(f"channel_values: no host has a channel named {name!r}"
                               + (f"; did you mean {', '.join(near)}?" if near else "; reveal channels lists them"))


def print_retrospectives(out) -> None:
    """Each named retrospective: its name, what it answers, and its parameters."""
    for name, retrospective in retrospectives.retrospectives().items():
        print(name, file=out)
        print(textwrap.fill(retrospective.question, 100, initial_indent="    ", subsequent_indent="    "), file=out)
        for parameter in retrospective.parameters:
            print(textwrap.fill(parameter.usage(), 100, initial_indent="    --param ",
                                subsequent_indent=" " * 12), file=out)
    print("run one: reveal sql --query NAME [--param NAME=VALUE ...]", file=out)


def open_reader(args):
    """The running reveal run that holds --data-dir, or the stored database itself (read-only unless --write)."""
    from reveal.cli import CommandError
    from reveal.live.client import RunQueries, running_service
    from sinks.clickhouse import ClickHouseReader, StorageError, data_dir_dsn, describe_dsn

    if args.clickhouse:
        dsn = clickhouse_dsn(args.clickhouse)
        folder = embedded_data_folder(dsn)
        url = running_service(folder) if folder is not None else None
        if url is not None and not args.write:
            return RunQueries(url)
    else:
        folder = args.data_dir or DEFAULT_DATA_DIR
        url = running_service(folder)
        if url is not None and args.write:
            raise CommandError(f"--write: {folder} is being written by a running reveal run ({url}/); it answers "
                               "read-only queries only")
        if url is not None:
            return RunQueries(url)
        if not (Path(folder) / "clickhouse").is_dir():
            raise CommandError(f"--data-dir {folder}: no Reveal data there (no clickhouse/ folder); "
                               "reveal run --data-dir DIR stores some")
        dsn = data_dir_dsn(folder)
    try:
        return ClickHouseReader(dsn, args.database, writable=args.write)
    except StorageError as error:
        if "Cannot lock file" in str(error) or "Another server instance" in str(error):
            raise CommandError(f"{describe_dsn(dsn)} is held by another process (a reveal run or worker that "
                               "announces no query service, or another chDB user); stop it, or query it through "
                               "the process that holds it") from None
        raise CommandError(str(error)) from None


def _explained(error: str) -> str:
    first = error.splitlines()[0] if error else error
    return f"{first} (reveal sql only reads unless given --write)" if "only reads are allowed" in first else first


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
    """One JSON object per row; NaN and infinities are null (JSON has no such numbers)."""
    for row in rows:
        print(json.dumps({c: _json_value(v) for c, v in zip(columns, row)}, default=str, allow_nan=False), file=out)


def _json_value(value):
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    return value


PRINTERS = {"table": print_table, "tsv": print_tsv, "jsonl": print_jsonl}
