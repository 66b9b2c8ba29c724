"""The `reveal` command: one subcommand per way of running Reveal."""

from __future__ import annotations

import argparse
import logging
import sys

from stream_jobs.allocator import tune_allocator
from stream_jobs.blas_threads import limit_blas_threads
from reveal.cli.config import CONFIG_ENV, env_name, settle
from reveal.cli import (agent, alerts, bench, channels, collect, compare_windows, detect, lab, report, run, sql,
                        worker)

__all__ = [
    "RevealParser", "build_parser", "configurable_commands", "installed_version", "main", "CommandError", "agent",
    "alerts", "bench", "channels", "collect", "compare_windows", "config", "detect", "lab", "options", "report",
    "run", "sql", "worker"
]

COMMANDS = (run, agent, worker, collect, detect, compare_windows, sql, alerts, channels, report, bench, lab)
LONG_RUNNING = frozenset({"run", "agent", "worker", "collect"})  # these print their settings once on start


class RevealParser(argparse.ArgumentParser):
    """argparse with mistakes told in one line (the option, the value, what is allowed) and exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = RevealParser(
        prog="reveal",
        description="Reveal finds silent inefficiencies in ML infrastructure from hardware telemetry alone: "
                    "an agent samples /proc, /sys and the GPU every 100 ms, and detectors flag, attribute and "
                    "explain anomalous windows per host.",
        epilog="Run 'reveal COMMAND --help' for the options of each command.")
    parser.add_argument("--version", action=PrintVersion)
    parser.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"),
                        help="how much to log on stderr (default: INFO)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.register(commands)
    for name, command in configurable_commands(parser).items():
        command.add_argument("--config", metavar="FILE",
                             help=f"a TOML file of settings: keys are the options' names, at the top level or in a "
                                  f"[{name}] table; flags > REVEAL_<OPTION> variables > file > defaults (default: "
                                  f"${CONFIG_ENV}, else none)")
        _defer_required(command)
    return parser


def _defer_required(command: argparse.ArgumentParser) -> None:
    """A required option may come from the environment or the settings file, which are read after parsing: argparse
    stops requiring it and `missing_required` checks once they are."""
    required = [a for a in command._actions if a.required and a.option_strings]
    for action in required:
        action.required = False
    command.set_defaults(required_options=tuple((a.dest, a.option_strings[-1]) for a in required))


def missing_required(args: argparse.Namespace) -> str | None:
    """The one-line complaint for a required option set by no flag, variable or file; None when all are set."""
    for dest, flag in getattr(args, "required_options", ()):
        if getattr(args, dest, None) is None:
            return (f"{flag} is required: give it as a flag, as {env_name(dest)}, or as '{dest.replace('_', '-')}' "
                    f"in the settings file (see reveal {args.command} --help)")
    return None


def configurable_commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The commands whose options a settings file may set: those without subcommands of their own."""
    choices = next(a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: command for name, command in choices.items()
            if not any(isinstance(a, argparse._SubParsersAction) for a in command._actions)}


class PrintVersion(argparse.Action):
    """`--version`: print Reveal's installed version and exit; the package metadata is read only then (reading it
    costs every command, the agent's resident memory included, over a megabyte)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest, nargs=0, default=default,
                         help=help or "print Reveal's version and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"reveal {installed_version()}")
        parser.exit()


def installed_version() -> str:
    """Reveal's version as installed (pyproject.toml's), or 'unknown' when run from a tree that was never installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("reveal")
    except PackageNotFoundError:
        return "unknown (not installed)"


def main(argv: list[str] | None = None) -> int:
    tune_allocator()
    limit_blas_threads()
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("aiokafka", "faust", "mode"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))
    try:
        commands = configurable_commands(parser)
        if args.command in commands:
            settled = settle(args, sys.argv[1:] if argv is None else argv, commands[args.command], commands)
            missing = missing_required(args)
            if missing:
                print(f"reveal {args.command}: {missing}", file=sys.stderr)
                return 2
            if args.command in LONG_RUNNING:
                logging.getLogger("reveal").info("%s", settled.describe(args))
        return args.handler(args) or 0
    except KeyboardInterrupt:
        print(f"reveal {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        _quiet_closed_stdout()
        return 0
    except Exception as error:
        if not isinstance(error, told_in_one_line()):
            raise
        print(f"reveal {args.command}: {error}", file=sys.stderr)
        return 2


# The errors a command tells in one line (the mistake, what is allowed), by module: a command imports only what it
# needs, and a module it never imported raised none of its errors
ONE_LINE_ERRORS = (("schemas.topics", "BrokerUnavailable"), ("sinks.clickhouse", "StorageError"),
                   ("reveal.lab.hosts", "LabError"))


def told_in_one_line() -> tuple[type[BaseException], ...]:
    loaded = [getattr(sys.modules[module], name) for module, name in ONE_LINE_ERRORS if module in sys.modules]
    return (CommandError, ValueError, *loaded)


def _quiet_closed_stdout() -> None:
    """The reader of our output went away (`reveal channels | head`): what is left unwritten goes nowhere, and
    Python's flush at exit must not fail again."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


class CommandError(Exception):
    """A mistake in how a command was called or configured; the message says what and what is allowed."""


if __name__ == "__main__":
    sys.exit(main())
