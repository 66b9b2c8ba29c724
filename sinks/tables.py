"""Reveal's ClickHouse tables, read once from sql/tables.sql: each table's columns in order, shared by the writer,
the row builders and the readers so that the DDL is the only place a column is named."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

TABLES_SQL = Path(__file__).with_name("sql") / "tables.sql"
_CREATE_TABLE = re.compile(r"CREATE TABLE IF NOT EXISTS \{db\}\.(\w+)\s*\((.*?)\n\)\s*ENGINE", re.S)
# ClickHouse fills a column whose default is the time of storage (stored_at, seen_at, scored_at); no row gives it.
_STORAGE_TIME_DEFAULT = re.compile(r"\bDEFAULT now(64)?\(")
# A DateTime64 is written as integer ticks of its precision and read back the same way.
_TICKS_SINCE_EPOCH = {"3": "toUnixTimestamp64Milli", "6": "toUnixTimestamp64Micro", "9": "toUnixTimestamp64Nano"}
_DATETIME64 = re.compile(r"^DateTime64\((\d)\)")

# What each table holds, in the words the console, the report, the live page and the README use: the one place
# tables are described (`reveal sql --help` prints it; a test holds the README to it).
TABLE_DESCRIPTIONS = {
    "frames": "raw values per host and instant, in catalog order (one channel: the channel_values view below)",
    "catalogs": "each host's channels per catalog version: names, subsystems, kinds, units, devices",
    "windows": "one row per host window: the host detectors' score against its threshold, each detector's, and "
               "whether the window was anomalous",
    "anomalies": "one finding about one host window, from any source (host detectors, channel watch, peers, "
                 "retransmissions, configuration), with its claim, hint and ranked metric–feature evidence",
    "alerts": "incidents as alert events (open, update, closed) keyed by alert_id, with severity 1–10 (1 at the "
              "band's edge, one more per doubling; 4 major, 7 critical), subsystem, summary and hint",
    "retransmissions": "each window's retransmission verdict (workload-intrinsic, fault-induced, …) and its reason",
    "baselines": "learned baselines, restored after a restart",
    "lab_faults": "lab runs: each injected fault, its interval and whether it took effect",
    "lab_scores": "lab runs: each scenario's scores",
}
CHANNEL_EXAMPLE = ("SELECT ts, value FROM channel_values(name = 'cpu.user.all') WHERE host = 'gpu-node-1' "
                   "ORDER BY ts")


class ColumnMismatch(ValueError):
    """A row or a query named columns that its table does not have, or left out some that it has."""


@dataclass(frozen=True)
class Table:
    """One table of tables.sql: the columns a row gives, in the DDL's order, and each column's DDL type."""

    name: str
    columns: tuple[str, ...]
    types: Mapping[str, str] = field(compare=False)

    def row(self, **values) -> list:
        """The values in column order, for the writer; a column left out or one the table lacks is a
        ColumnMismatch naming it."""
        try:
            row = [values[column] for column in self.columns]
        except KeyError as missing:
            raise ColumnMismatch(f"a row of {self.name} needs column {missing.args[0]}") from None
        if len(values) != len(self.columns):
            raise ColumnMismatch(f"{self.name} has no column {', '.join(sorted(set(values) - set(self.columns)))}")
        return row

    def select(self, columns: Iterable[str] | None = None) -> str:
        """A SELECT list of `columns` (all a row gives, by default), in that order, with each DateTime64 read back
        as the integer ticks a row writes."""
        names = self.columns if columns is None else tuple(columns)
        unknown = [name for name in names if name not in self.types]
        if unknown:
            raise ColumnMismatch(f"{self.name} has no column {', '.join(unknown)}")
        return ", ".join(self._read_expression(name) for name in names)

    def _read_expression(self, column: str) -> str:
        precision = _DATETIME64.match(self.types[column])
        return f"{_TICKS_SINCE_EPOCH[precision.group(1)]}({column})" if precision else column


def read_tables(ddl: str) -> dict[str, Table]:
    """Every CREATE TABLE of `ddl`, in order, as a Table (columns the storage time fills are not a row's)."""
    tables = {}
    for name, body in _CREATE_TABLE.findall(ddl):
        types = dict(_column_definition(line) for line in body.splitlines()
                     if line.strip() and not line.strip().startswith("--"))
        written = tuple(column for column, kind in types.items() if not _STORAGE_TIME_DEFAULT.search(kind))
        tables[name] = Table(name, written, types)
    return tables


def _column_definition(line: str) -> tuple[str, str]:
    """(name, type with codec and default) of one column line of a CREATE TABLE."""
    name, _, definition = line.strip().rstrip(",").partition(" ")
    return name, definition.strip()


def create_statements(database: str) -> list[str]:
    """The statements of tables.sql for one database, each table and view created unless it exists."""
    return [statement.replace("{db}", database) for statement in TABLES_SQL.read_text().split(";")
            if "CREATE" in statement]


TABLES = read_tables(TABLES_SQL.read_text())
COLUMNS = {name: table.columns for name, table in TABLES.items()}
FRAMES, CATALOGS, WINDOWS, ANOMALIES, ALERTS = (TABLES[name] for name in
                                                 ("frames", "catalogs", "windows", "anomalies", "alerts"))
BASELINES, RETRANSMISSIONS, LAB_FAULTS, LAB_SCORES = (TABLES[name] for name in
                                                       ("baselines", "retransmissions", "lab_faults", "lab_scores"))
