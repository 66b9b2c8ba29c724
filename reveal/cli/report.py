"""`reveal report`: one self-contained HTML file with the anomaly timelines, causes, traces and incidents of a run."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from pathlib import Path

from reveal.cli.options import DEFAULT_DATA_DIR, DSN_HELP, clickhouse_dsn, output_file


def register(commands) -> None:
    parser = commands.add_parser(
        "report", help="write an HTML report of stored windows, anomalies and incidents",
        description="Read Reveal's ClickHouse tables and write one self-contained HTML file (inline CSS and SVG, "
                    "nothing fetched): a summary, each detector's score against its threshold per host, the "
                    "subsystems behind anomalous windows, raw traces of the most implicated channels, a cross-host "
                    "comparison, the incidents, and for lab runs the ground truth and scores.")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--run", metavar="DIR", help="a lab run folder (its chDB data is in DIR/clickhouse)")
    source.add_argument("--clickhouse", metavar="DSN", help=DSN_HELP)
    source.add_argument("--data-dir", metavar="DIR",
                        help=f"embedded data folder, as given to reveal run (default: {DEFAULT_DATA_DIR} when neither "
                             "--run nor --clickhouse is given)")
    parser.add_argument("--database", default="reveal", metavar="NAME", help="database (default: reveal)")
    parser.add_argument("--since", type=iso_time, metavar="ISO-TIME",
                        help="only data from this instant on, e.g. 2026-03-01T12:00:00 (UTC unless an offset is "
                             "given)")
    parser.add_argument("--host", action="append", default=[], metavar="H",
                        help="only this host (repeatable; default: every host)")
    parser.add_argument("--out", type=output_file(".html", ".htm"), required=True, metavar="FILE", help="the HTML file to write, e.g. report.html")
    parser.set_defaults(handler=handle)


def iso_time(text: str) -> int:
    """An ISO-8601 instant as ns since the epoch; without an offset it is UTC."""
    try:
        instant = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO-8601 time (example: 2026-03-01T12:00:00)") from None
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=timezone.utc)
    return int(instant.timestamp()) * 10**9 + instant.microsecond * 1000


def source_dsn(args) -> str:
    """The DSN of --clickhouse, or of the chDB folder inside --run or --data-dir, which must already exist."""
    from reveal.cli import CommandError
    from sinks.clickhouse import data_dir_dsn

    if args.clickhouse:
        return clickhouse_dsn(args.clickhouse)
    option, folder = ("--run", args.run) if args.run else ("--data-dir", args.data_dir)
    if not Path(folder).is_dir():
        raise CommandError(f"{option} {folder}: no such folder")
    if not (Path(folder) / "clickhouse").is_dir():
        raise CommandError(f"{option} {folder}: no clickhouse/ folder inside, so no stored data to report on")
    return data_dir_dsn(folder)


def handle(args) -> int:
    from reveal.live.client import RunQueries, running_service
    from reveal.report.contents import gather
    from reveal.report.data import ReportStore, Scope
    from reveal.report.page import render_report
    from sinks.clickhouse import describe_dsn

    if not (args.run or args.clickhouse or args.data_dir):
        args.data_dir = DEFAULT_DATA_DIR
    folder = args.run or args.data_dir
    url = running_service(folder) if folder else None
    if url is not None:
        source, queries = f"the running reveal run at {url}", RunQueries(url)
    else:
        dsn = source_dsn(args)
        source, queries = describe_dsn(dsn), _reader(dsn, args.database)
    _refuse_unknown_hosts(ReportStore(queries, args.database), args.host)
    store = ReportStore(queries, args.database, Scope(since_ns=args.since or 0, hosts=tuple(args.host)))
    _progress(f"reading {source}, database {args.database}")
    page = render_report(gather(store, source, _progress))
    out = Path(args.out)
    out.write_text(page, encoding="utf-8")
    print(f"report written to {out} ({out.stat().st_size / 1024:,.0f} KiB)")
    return 0


def _refuse_unknown_hosts(store: ReportStore, wanted: list[str]) -> None:
    from reveal.cli import CommandError

    if not wanted:
        return
    known = store.hosts()
    unknown = [host for host in wanted if host not in known]
    if unknown:
        raise CommandError(f"--host {unknown[0]!r}: no such host in the stored data; hosts: "
                           f"{', '.join(known) or 'none'}")


def _reader(dsn: str, database: str) -> ClickHouseReader:
    from reveal.cli import CommandError
    from sinks.clickhouse import ClickHouseReader, StorageError

    try:
        return ClickHouseReader(dsn, database)
    except StorageError as error:
        raise CommandError(str(error)) from None


def _progress(line: str) -> None:
    print(f"report: {line}", file=sys.stderr, flush=True)
