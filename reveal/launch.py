"""The `reveal` command's entry point: a command pointed at a run notes itself as Reveal's own on this host (see
producers.own_commands) before anything heavy is imported, so that its whole life, start-up included, is known to
the agent, then the command runs."""

from __future__ import annotations

import sys

from producers.own_commands import noted_command

# The commands an operator points at a run: their load on a monitored host is Reveal's own, not the host's
NOTED_COMMANDS = frozenset({"sql", "report", "alerts", "channels", "compare-windows"})
_OPTIONS_WITH_VALUES = frozenset({"--log-level"})
_UNTIL_STOPPED = frozenset({"--follow", "--webhook"})


def command_named(argv: list[str]) -> str | None:
    """The subcommand in `reveal`'s arguments (the first word that is neither an option nor an option's value)."""
    words = iter(argv)
    for word in words:
        if word in _OPTIONS_WITH_VALUES:
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def noted(argv: list[str]) -> str | None:
    """The command to note, if it is one pointed at a run that ends by itself: one that runs until stopped (`reveal
    alerts --follow` or `--webhook`, a consumer an operator keeps running) puts a steady load on the host, which is
    learned with its baseline as any other service's is."""
    command = command_named(argv)
    if command not in NOTED_COMMANDS or any(word in _UNTIL_STOPPED for word in argv):
        return None
    return command


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = noted(argv)
    if command is None:
        return _run(argv)
    with noted_command(command):
        return _run(argv)


def _run(argv: list[str]) -> int:
    from reveal.cli import main as reveal_main

    return reveal_main(argv)


if __name__ == "__main__":
    sys.exit(main())
