"""`reveal channels`: the channel catalog, of this host as the agent would sample it, or of hosts stored in a data
folder or ClickHouse."""

from __future__ import annotations

import sys

from schemas.agent_records import Catalog
from reveal.cli.options import DSN_HELP, add_agent_options, agent_settings
from reveal.cli.sql import PRINTERS, open_reader

COLUMNS = ("host", "name", "subsystem", "kind", "unit", "device")
LATEST_CATALOGS_SQL = """
SELECT host, argMax(names, version), argMax(subsystems, version), argMax(kinds, version), argMax(units, version),
       argMax(devices, version)
FROM catalogs GROUP BY host ORDER BY host"""


def register(commands) -> None:
    parser = commands.add_parser(
        "channels", help="list the channels of a host's catalog: name, subsystem, kind, unit, device",
        description="List the channels Reveal reads: by default this host's, as the agent would sample it with the "
                    "same options; with --data-dir or --clickhouse, the latest stored catalog of every host (or of "
                    "--host).")
    stored = parser.add_mutually_exclusive_group()
    stored.add_argument("--data-dir", metavar="DIR", help="list the catalogs stored in this embedded data folder")
    stored.add_argument("--clickhouse", metavar="DSN", help=DSN_HELP)
    parser.add_argument("--database", default="reveal", help="database of --data-dir or --clickhouse "
                                                             "(default: reveal)")
    parser.add_argument("--format", choices=tuple(PRINTERS), default="table",
                        help="table for people, tsv or jsonl for scripts (default: table)")
    add_agent_options(parser)
    parser.set_defaults(handler=handle, write=False)


def handle(args) -> int:
    rows = stored_channels(args) if args.data_dir or args.clickhouse else local_channels(args)
    if args.data_dir or args.clickhouse:
        if args.host and not any(row[0] == args.host for row in rows):
            from reveal.cli import CommandError

            known = sorted({row[0] for row in rows})
            raise CommandError(f"--host {args.host!r}: no stored catalog; hosts: {', '.join(known) or 'none'}")
        rows = [row for row in rows if not args.host or row[0] == args.host]
    PRINTERS[args.format](COLUMNS, rows, sys.stdout)
    return 0


def local_channels(args) -> list[tuple]:
    """This host's catalog after one sample, read with the agent's options."""
    from producers.agent import Agent

    seen: list[Catalog] = []
    sink = type("CatalogSink", (), {"on_catalog": lambda self, c: seen.append(c), "on_frame": lambda self, f: None})()
    agent = Agent(agent_settings(args), sink)
    try:
        agent.sample_once()
    finally:
        agent.close()
    return catalog_rows(seen[-1])


def catalog_rows(catalog: Catalog) -> list[tuple]:
    return [(catalog.host, c.name, c.subsystem, c.kind, c.unit, c.device) for c in catalog.channels]


def stored_channels(args) -> list[tuple]:
    reader = open_reader(args)
    try:
        _, catalogs = reader.query(LATEST_CATALOGS_SQL)
    finally:
        reader.close()
    return [(host, *channel) for host, *columns in catalogs for channel in zip(*columns)]
