"""The `reveal` command: one subcommand per way of running Reveal."""

from __future__ import annotations

import argparse
import logging
import sys

from schemas.topics import BrokerUnavailable
from sinks.clickhouse import StorageError
from stream_jobs.allocator import tune_allocator
from stream_jobs.lab.hosts import LabError
from stream_jobs.cli import agent, bench, collect, detect, report, run, sql, worker, lab

COMMANDS = (run, agent, worker, collect, detect, sql, report, bench, lab)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reveal",
        description="Reveal finds silent inefficiencies in ML infrastructure from hardware telemetry alone: "
                    "an agent samples /proc, /sys and the GPU every 100 ms, and detectors flag, attribute and "
                    "explain anomalous windows per host.",
        epilog="Run 'reveal COMMAND --help' for the options of each command.")
    parser.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"),
                        help="how much to log on stderr (default: INFO)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    tune_allocator()
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("aiokafka", "faust", "mode"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))
    try:
        return args.handler(args) or 0
    except (CommandError, BrokerUnavailable, StorageError, LabError, ValueError) as error:
        print(f"reveal {args.command}: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"reveal {args.command}: interrupted", file=sys.stderr)
        return 130


class CommandError(Exception):
    """A mistake in how a command was called or configured; the message says what and what is allowed."""


if __name__ == "__main__":
    sys.exit(main())
