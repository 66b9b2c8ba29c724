"""Named SQL retrospectives: the questions performance engineers ask of Reveal's tables, one `.sql` file each.

Each file starts with comment lines: the question it answers, then one line per parameter,

    -- param NAME TYPE [= DEFAULT] : what it is

and the query uses the parameters as ClickHouse binds them, `{NAME:TYPE}`. A parameter without a default must be
given; an empty default (`= ` then nothing) is the empty string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RETROSPECTIVES_DIR", "Parameter", "Retrospective", "RetrospectiveError", "load", "retrospectives"]

RETROSPECTIVES_DIR = Path(__file__).with_name("sql") / "retrospectives"
_PARAMETER_LINE = re.compile(r"^-- param (?P<name>\w+) (?P<type>\S+)(?: =(?P<default> .*?|))? : (?P<text>.+)$")
_PLACEHOLDER = re.compile(r"\{(\w+):([^}]+)\}")


class RetrospectiveError(ValueError):
    """A retrospective that does not exist, a parameter it does not take, or one it needs and was not given."""


@dataclass(frozen=True)
class Parameter:
    name: str
    type: str
    default: str | None
    description: str

    def usage(self) -> str:
        given = "required" if self.default is None else f"default {self.default!r}"
        return f"{self.name} ({self.type}, {given}): {self.description}"


@dataclass(frozen=True)
class Retrospective:
    """One named query: what it answers, the parameters it takes, and its SQL."""

    name: str
    question: str
    parameters: tuple[Parameter, ...]
    sql: str

    def bound(self, given: dict[str, str]) -> dict[str, str]:
        """Every parameter's value: the given ones, defaults for the rest; unknown or missing names raise."""
        known = {p.name: p for p in self.parameters}
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise RetrospectiveError(f"--param {unknown[0]}: {self.name} takes "
                                     f"{', '.join(known) or 'no parameters'}")
        missing = [p.name for p in self.parameters if p.default is None and p.name not in given]
        if missing:
            raise RetrospectiveError(f"{self.name} needs --param {missing[0]}=… ({known[missing[0]].usage()})")
        return {p.name: given.get(p.name, p.default) for p in self.parameters}


def parse(name: str, text: str) -> Retrospective:
    """A retrospective from its file's text; its placeholders must be exactly the declared parameters."""
    header = _leading_comments(text)
    parameters = tuple(_parameter(line) for line in header if line.startswith("-- param "))
    question = " ".join(line[3:].strip() for line in header if not line.startswith("-- param "))
    declared = {p.name: p.type for p in parameters}
    used = dict(_PLACEHOLDER.findall(text))
    if used != declared:
        raise RetrospectiveError(f"{name}: the query binds {used} but its header declares {declared}")
    if not question:
        raise RetrospectiveError(f"{name}: the header does not say what the query answers")
    return Retrospective(name, question, parameters, text)


def _leading_comments(text: str) -> list[str]:
    lines = []
    for line in text.splitlines():
        if not line.startswith("--"):
            break
        lines.append(line.rstrip())
    return lines


def _parameter(line: str) -> Parameter:
    match = _PARAMETER_LINE.match(line)
    if match is None:
        raise RetrospectiveError(f"malformed parameter line {line!r}: expected '-- param NAME TYPE [= DEFAULT] : "
                                 "what it is'")
    default = match["default"]
    return Parameter(match["name"], match["type"], None if default is None else default.strip(), match["text"])


def retrospectives(folder: Path = RETROSPECTIVES_DIR) -> dict[str, Retrospective]:
    """Every retrospective in the folder, by name (the file name without .sql), in name order."""
    return {path.stem: parse(path.stem, path.read_text()) for path in sorted(folder.glob("*.sql"))}


def load(name: str, folder: Path = RETROSPECTIVES_DIR) -> Retrospective:
    """One retrospective by name; an unknown name lists the known ones."""
    path = folder / f"{name}.sql"
    if not re.fullmatch(r"[\w-]+", name) or not path.is_file():
        raise RetrospectiveError(f"--query {name!r}: no such retrospective; known: "
                                 f"{', '.join(p.stem for p in sorted(folder.glob('*.sql')))}")
    return parse(name, path.read_text())
