"""Telling a read from a write before it runs, with ClickHouse's own parser: one statement, of a kind that only reads
(SELECT, SHOW, DESCRIBE, EXPLAIN, EXISTS), touching no table function that reaches outside the database.

Used where a per-query `readonly` setting cannot be: the embedded ClickHouse keeps settings for its whole session, so
a read-only query there would leave the writer that shares the session read-only too."""

from __future__ import annotations

import re
from typing import Callable

READING_STATEMENTS = ("SelectWithUnionQuery", "SelectIntersectExceptQuery", "ShowTables", "DescribeQuery", "Explain",
                      "ExistsTableQuery", "ShowCreateTableQuery", "ShowColumns", "ShowDatabases")
OUTSIDE_FUNCTIONS = frozenset({"file", "url", "urlCluster", "s3", "s3Cluster", "gcs", "hdfs", "remote",
                               "remoteSecure", "cluster", "clusterAllReplicas", "mysql", "postgresql", "mongodb",
                               "redis", "sqlite", "jdbc", "odbc", "executable", "azureBlobStorage", "deltaLake",
                               "hudi", "iceberg", "input", "fileCluster"})
_TABLE_FUNCTION = re.compile(r"^\s*Function (\w+)")
_OUTFILE = re.compile(r"\bINTO\s+OUTFILE\b", re.IGNORECASE)


class WriteRefused(ValueError):
    """A statement that would change data, or reach outside the database, where only reads are allowed."""


def check_read_only(sql: str, explain_ast: Callable[[str], list[str]]) -> None:
    """Raise WriteRefused unless `sql` is one statement that only reads; `explain_ast` returns the lines of
    EXPLAIN AST for a statement (parsing only: nothing runs)."""
    statement = single_statement(sql)
    if _OUTFILE.search(without_literals(statement)):
        raise WriteRefused("INTO OUTFILE writes a file; only reads are allowed")
    lines = explain_ast(statement)
    kind = lines[0].split()[0] if lines else ""
    if kind not in READING_STATEMENTS:
        raise WriteRefused(f"a {kind or 'statement'} changes data or settings; only reads are allowed "
                           "(SELECT, SHOW, DESCRIBE, EXPLAIN, EXISTS)")
    reached = sorted({m.group(1) for m in map(_TABLE_FUNCTION.match, lines) if m} & OUTSIDE_FUNCTIONS)
    if reached:
        raise WriteRefused(f"the table function {reached[0]}() reaches outside the database; only Reveal's tables "
                           "can be read here")


def single_statement(sql: str) -> str:
    """The statement without trailing semicolons; WriteRefused when a second statement follows."""
    text = sql.strip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    if ";" in without_literals(text):
        raise WriteRefused("one statement at a time: a ';' separates statements")
    return text


def without_literals(sql: str) -> str:
    """The text with string literals, quoted names and comments blanked out, so their contents are not read as SQL."""
    out, index, length = [], 0, len(sql)
    while index < length:
        char = sql[index]
        if char in "'\"`":
            end = index + 1
            while end < length and sql[end] != char:
                end += 2 if sql[end] == "\\" else 1
            out.append(" ")
            index = end + 1
        elif sql.startswith("--", index):
            end = sql.find("\n", index)
            index = length if end < 0 else end
        elif sql.startswith("/*", index):
            end = sql.find("*/", index + 2)
            index = length if end < 0 else end + 2
        else:
            out.append(char)
            index += 1
    return "".join(out)
