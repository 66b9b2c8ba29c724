"""Settings from a TOML file (`--config`, or the REVEAL_CONFIG environment variable) and from REVEAL_<OPTION>
environment variables, under the command line: flags > environment > file > defaults.

The file's keys are the options' names (`data-dir` or `data_dir`); top-level keys apply to every command that has
the option, and a table per command (`[run]`, `[agent]`, …) to that command only:

    interval = 0.1
    [run]
    data-dir = "/var/lib/reveal"
    listen = "127.0.0.1:9931"

The engine's settings tree has tables of its own, for every command that judges windows: `[decision]` (how a
flagged window becomes an incident: durations in seconds, see stream_jobs.engine.decide.settings) and `[watch]` (how
far and how long a channel must depart, see stream_jobs.engine.channel_watch.WatchSettings):

    [decision]
    close_after_s = 30
"""

from __future__ import annotations

import argparse
import os
import tomllib
from dataclasses import dataclass, field, fields

CONFIG_ENV = "REVEAL_CONFIG"
# The engine's settings tables a file may hold beside the commands' (see engine_settings_tables)
SETTINGS_TABLES = ("decision", "watch")
NOT_CONFIGURABLE = frozenset({"help", "version", "config"})
TRUE_WORDS, FALSE_WORDS = frozenset({"1", "true", "yes", "on"}), frozenset({"0", "false", "no", "off"})


class ConfigError(ValueError):
    """A settings file or variable that cannot be used; the message names the key, its value and what is allowed."""


@dataclass
class Settled:
    """Where each option's value came from: flag, environment (the variable), file, default."""

    sources: dict[str, str] = field(default_factory=dict)

    def describe(self, args: argparse.Namespace) -> str:
        shown = [f"{dest}={getattr(args, dest)!r} ({source})" for dest, source in sorted(self.sources.items())
                 if source != "default"]
        return "settings: " + (", ".join(shown) if shown else "all defaults")


def env_name(dest: str) -> str:
    return "REVEAL_" + dest.upper()


def options_of(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The command's configurable options by destination."""
    return {a.dest: a for a in parser._actions  # argparse keeps no public list of a parser's actions
            if a.option_strings and a.dest not in NOT_CONFIGURABLE and a.dest != argparse.SUPPRESS}


def read_file(path: str) -> dict:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as error:
        raise ConfigError(f"config file {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"config file {path}: not valid TOML ({error})") from None


def file_values(document: dict, command: str, commands: dict[str, argparse.ArgumentParser], path: str) -> dict:
    """The file's values for `command` (its own table over the top-level keys), by destination; a key no command
    knows, or a table's key its command lacks, is an error that names it and what is allowed."""
    known_anywhere = {dest for parser in commands.values() for dest in options_of(parser)}
    top = {k.replace("-", "_"): v for k, v in document.items() if not isinstance(v, dict)}
    for key in top:
        if key not in known_anywhere:
            raise ConfigError(f"config file {path}: unknown key {key!r}; allowed: {', '.join(sorted(known_anywhere))}")
    for table, values in document.items():
        if isinstance(values, dict) and table not in commands and table not in SETTINGS_TABLES:
            allowed = sorted(commands) + list(SETTINGS_TABLES)
            raise ConfigError(f"config file {path}: unknown table [{table}]; allowed: {', '.join(allowed)}")
    own = {k.replace("-", "_"): v for k, v in document.get(command, {}).items()}
    allowed = options_of(commands[command])
    for key in own:
        if key not in allowed:
            raise ConfigError(f"config file {path}: [{command}] has no option {key!r}; allowed: "
                              f"{', '.join(sorted(allowed))}")
    return {k: v for k, v in (top | own).items() if k in allowed}


def settle(args: argparse.Namespace, argv: list[str], command_parser: argparse.ArgumentParser,
           commands: dict[str, argparse.ArgumentParser], environ=os.environ) -> Settled:
    """Fill every option not given as a flag from the environment, then the file; returns where each came from."""
    options = options_of(command_parser)
    given = {a.dest for a in options.values() if any(_flag_given(s, argv) for s in a.option_strings)}
    path = getattr(args, "config", None) or environ.get(CONFIG_ENV)
    document = read_file(path) if path else {}
    from_file = file_values(document, args.command, commands, path) if path else {}
    args.settings_tables = {table: (path, document[table]) for table in SETTINGS_TABLES if table in document}
    settled = Settled()
    for dest, action in options.items():
        if dest in given:
            settled.sources[dest] = "flag"
        elif env_name(dest) in environ:
            setattr(args, dest, convert(action, environ[env_name(dest)], env_name(dest), from_text=True))
            settled.sources[dest] = env_name(dest)
        elif dest in from_file:
            setattr(args, dest, convert(action, from_file[dest], f"{path}: {dest}", from_text=False))
            settled.sources[dest] = "file"
        else:
            settled.sources[dest] = "default"
    return settled


def _flag_given(option: str, argv: list[str]) -> bool:
    return any(arg == option or arg.startswith(option + "=") for arg in argv)


def convert(action: argparse.Action, value, where: str, from_text: bool):
    """A value from the environment (text) or the file (TOML types) through the option's own checks."""
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        return _boolean(value, where) if isinstance(action, argparse._StoreTrueAction) else not _boolean(value, where)
    if isinstance(action, argparse._AppendAction):
        items = value.split(",") if from_text else value
        if not isinstance(items, list):
            raise ConfigError(f"{where}: {value!r} must be a list")
        return [_one(action, item, where) for item in items]
    return _one(action, value, where)


def _one(action: argparse.Action, value, where: str):
    text = str(value) if not isinstance(value, str) else value
    try:
        converted = action.type(text) if action.type else text
    except (argparse.ArgumentTypeError, ValueError) as error:
        raise ConfigError(f"{where}: {text!r}: {error}") from None
    if action.choices is not None and converted not in action.choices:
        raise ConfigError(f"{where}: {text!r} is not one of {', '.join(map(str, action.choices))}")
    return converted


def _boolean(value, where: str) -> bool:
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in TRUE_WORDS | FALSE_WORDS:
        return word in TRUE_WORDS
    raise ConfigError(f"{where}: {value!r} is not true or false")


def settings_table(settings_class, table: str, tables: dict):
    """`settings_class` with the values of the file's `[table]` over its defaults; a key it lacks or a value that
    is not a number is an error that names the key and what is allowed."""
    if table not in tables:
        return settings_class()
    path, values = tables[table]
    allowed = {f.name for f in fields(settings_class)}
    for key, value in values.items():
        if key not in allowed:
            raise ConfigError(f"config file {path}: [{table}] has no setting {key!r}; allowed: "
                              f"{', '.join(sorted(allowed))}")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"config file {path}: [{table}] {key} = {value!r}; expected a number")
    try:
        return settings_class(**{key: float(value) for key, value in values.items()})
    except ValueError as error:
        raise ConfigError(f"config file {path}: [{table}] {error}") from None
