"""One ClickHouse writer for both targets: `chdb:///path` (embedded, in-process) and `http(s)://host:port`."""

from __future__ import annotations

import contextlib
import logging
import re
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlparse

import clickhouse_connect
from clickhouse_connect.driver import options as driver_options

from sinks.merge_priority import MergeThreadPriority
from sinks.read_only import WriteRefused, check_read_only, single_statement
from sinks.rows import frame_rows_binary
from sinks.tables import COLUMNS, TABLES, create_statements
from stream_jobs.storage import StorageUnavailable

log = logging.getLogger(__name__)

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

RETAINED_TABLES = ("frames", "windows")
# Reveal stores a small part per table about every second, and merges retire them as fast. ClickHouse's cleanup backs
# off to 300 s while it finds little to do, and then removes hundreds of retired parts at once on a pool of up to 128
# new threads: a step of a gigabyte of committed memory (their stacks) and a burst of file deletions on the host
# Reveal watches. Cleaning every few seconds removes a few parts at a time, steadily, as part of the run's baseline.
STEADY_CLEANUP = "cleanup_delay_period = 1, cleanup_delay_period_random_add = 1, max_cleanup_delay_period = 5"
# Settings tables.sql gives a table that an earlier version's table lacks and that can change after creation (a
# frames table keeps the granule size it was made with).
LATER_SETTINGS = {"frames": "merge_max_block_size = 1024"}
# Settings a ClickHouse may not know (newer than some servers Reveal writes to): each is applied where it is known.
RECENT_SETTINGS = {"frames": {"merge_selector_base": 20}}
# Columns whose codec in tables.sql an earlier version's table lacks; a codec applies to the parts written after it.
LATER_CODECS = {"frames": ("values",)}
# Tables written as RowBinary built here rather than through clickhouse-connect's per-value column writers.
ROW_BINARY_TABLES = {"frames": frame_rows_binary}


class StorageError(StorageUnavailable):
    """ClickHouse could not be reached or refused a statement; the message names the target and the statement."""


def data_dir_dsn(data_dir: str | Path) -> str:
    """The embedded DSN for a data folder: chdb:///abs/path/clickhouse."""
    return f"chdb://{(Path(data_dir).resolve() / 'clickhouse').as_posix()}"


def describe_dsn(dsn: str) -> str:
    """The DSN without any password, for logs."""
    parsed = urlparse(dsn)
    if parsed.password:
        return dsn.replace(f":{parsed.password}@", ":***@")
    return dsn


def with_password(dsn: str, password: str | None) -> str:
    """The DSN with a password filled in for its user, when it names none (so that the password can come from the
    environment instead of a command line)."""
    parsed = urlparse(dsn)
    if not password or parsed.scheme == "chdb" or parsed.password:
        return dsn
    user = parsed.username or "default"
    host = parsed.netloc.rpartition("@")[2]
    return parsed._replace(netloc=f"{quote(user, safe='')}:{quote(password, safe='')}@{host}").geturl()


def check_dsn(dsn: str) -> str:
    """The DSN's scheme, once it is known to be chdb:///path or http(s)://host[:port]; StorageError otherwise."""
    parsed = urlparse(dsn)
    if parsed.scheme not in ("chdb", "http", "https"):
        raise StorageError(f"ClickHouse DSN {describe_dsn(dsn)!r}: scheme {parsed.scheme!r} is not one of chdb, "
                           "http, https")
    if not (parsed.path if parsed.scheme == "chdb" else parsed.hostname):
        raise StorageError(f"ClickHouse DSN {describe_dsn(dsn)!r} names no "
                           f"{'path' if parsed.scheme == 'chdb' else 'host'}")
    return parsed.scheme


def connect(dsn: str, create: bool = True):
    """A clickhouse-connect client for an embedded or server DSN; an embedded folder is made when `create`, and
    must exist otherwise."""
    scheme = check_dsn(dsn)
    skip_pandas_probe()
    if scheme == "chdb" and create:
        Path(urlparse(dsn).path).mkdir(parents=True, exist_ok=True)
    elif scheme == "chdb" and not Path(urlparse(dsn).path).is_dir():
        raise StorageError(f"no embedded ClickHouse at {urlparse(dsn).path} (nothing has been stored there)")
    try:
        return clickhouse_connect.get_client(dsn=dsn)
    except Exception as error:  # clickhouse-connect raises several unrelated types for an unreachable target
        raise StorageError(f"cannot open ClickHouse at {describe_dsn(dsn)}: {error}") from error


def skip_pandas_probe() -> None:
    """Tell clickhouse-connect that pandas is absent unless this process has loaded it already. Its first insert
    imports pandas only to ask whether the rows are a DataFrame: 66 MB more resident memory where it is imported
    alone, 0.2 MB per host of a 150-host worker (`reveal bench pipeline`). Reveal inserts lists and never asks
    clickhouse-connect for DataFrames."""
    if "pandas" not in sys.modules and "pd" not in vars(driver_options):
        driver_options.pd = driver_options.pd_time_test = None


@dataclass
class WriterStats:
    rows: dict = field(default_factory=lambda: {t: 0 for t in COLUMNS})
    batches: int = 0


class ClickHouseWriter:
    """Creates Reveal's tables in one database and appends rows to them in batches.

    Rows stay queued while inserts fail; `is_full` tells the caller to stop taking input once `max_pending_rows`
    are waiting (back-pressure: nothing queued is ever dropped)."""

    def __init__(self, dsn: str, database: str = "reveal", max_pending_rows: int = 50_000):
        if not _IDENTIFIER.match(database):
            raise StorageError(f"database name {database!r} must be a plain identifier")
        if max_pending_rows < 1:
            raise StorageError(f"max_pending_rows is {max_pending_rows}; expected at least 1")
        self.dsn, self.database, self.max_pending_rows = dsn, database, max_pending_rows
        self.client = connect(dsn)
        self.embedded = check_dsn(dsn) == "chdb"
        self._merge_priority = MergeThreadPriority() if self.embedded else None
        self.stats = WriterStats()
        self._lock = threading.Lock()
        self._client_lock = threading.Lock()  # one statement at a time on the client (a live page queries it too)
        self._pending: dict[str, list[list]] = {t: [] for t in COLUMNS}
        self._in_flight = 0  # rows taken by a flush that has not finished, still counted as waiting
        self._create_tables()

    def _create_tables(self) -> None:
        self.command(f"CREATE DATABASE IF NOT EXISTS {self.database}")
        for statement in create_statements(self.database):
            self.command(statement)
        known = self._known_table_settings()
        for table in COLUMNS:  # tables made by an earlier version are brought to the same settings and codecs
            recent = [f"{name} = {value}" for name, value in RECENT_SETTINGS.get(table, {}).items() if name in known]
            settings = ", ".join(filter(None, (STEADY_CLEANUP, LATER_SETTINGS.get(table), *recent)))
            self.command(f"ALTER TABLE {self.database}.{table} MODIFY SETTING {settings}")
            for column in LATER_CODECS.get(table, ()):
                column_type = TABLES[table].types[column]
                self.command(f"ALTER TABLE {self.database}.{table} MODIFY COLUMN {column} {column_type}")
        self.command(f"USE {self.database}")  # the embedded session keeps it
        self.client.database = self.database  # a server client sends it with every query

    def _known_table_settings(self) -> set[str]:
        """Which of RECENT_SETTINGS this ClickHouse knows as MergeTree table settings."""
        names = sorted({name for settings in RECENT_SETTINGS.values() for name in settings})
        _, rows = self.query("SELECT name FROM system.merge_tree_settings WHERE name IN {names:Array(String)}",
                             {"names": names})
        return {name for name, in rows}

    def keep_for(self, table: str, seconds: float) -> None:
        """Rows of `table` (frames or windows) are deleted `seconds` after they were stored."""
        if table not in RETAINED_TABLES:
            raise StorageError(f"retention applies to {', '.join(RETAINED_TABLES)}, not {table!r}")
        self.command(f"ALTER TABLE {self.database}.{table} MODIFY TTL stored_at + INTERVAL {int(seconds)} SECOND")

    def command(self, statement: str, parameters: dict | None = None):
        try:
            with self._client_lock:
                return self.client.command(statement, parameters=parameters)
        except Exception as error:
            raise StorageError(f"ClickHouse at {describe_dsn(self.dsn)} refused: {statement.strip()[:120]}… "
                               f"({error})") from error

    def query(self, sql: str, parameters: dict | None = None, read_only: bool = False):
        """Runs a query with bound parameters, refusing anything but one reading statement when `read_only`;
        returns (column names, rows)."""
        return run_query(self.client, self.dsn, sql, parameters, read_only, self._client_lock)

    def add(self, table: str, rows: list[list]) -> None:
        """Queue rows for the next flush (thread-safe)."""
        with self._lock:
            self._pending[table].extend(rows)

    def embedded_memory_bytes(self) -> int | None:
        """The memory an embedded ClickHouse (chDB) tracks for itself inside this process: its merges, inserts and
        caches; None for a server, whose memory is its own process's."""
        if not self.embedded:
            return None
        _, rows = self.query("SELECT value FROM system.metrics WHERE metric = 'MemoryTracking'")
        return int(rows[0][0]) if rows else None

    def pending_rows(self) -> int:
        with self._lock:
            return self._in_flight + sum(len(rows) for rows in self._pending.values())

    def is_full(self) -> bool:
        return self.pending_rows() >= self.max_pending_rows

    def flush(self) -> int:
        """Insert every queued row, one batch per table; if an insert fails, the rows of that table and of every
        table not yet written go back to the queue, ahead of rows queued since."""
        with self._lock:
            batches, self._pending = self._pending, {t: [] for t in COLUMNS}
            self._in_flight = sum(len(rows) for rows in batches.values())
        unwritten = {table: rows for table, rows in batches.items() if rows}
        try:
            for table, rows in list(unwritten.items()):
                self._insert(table, rows)
                del unwritten[table]
                with self._lock:
                    self._in_flight -= len(rows)
        finally:
            with self._lock:
                for table, rows in unwritten.items():
                    self._pending[table][:0] = rows
                self._in_flight = 0
        if self._merge_priority is not None:  # the merges these inserts start run on threads chDB may just have made
            self._merge_priority.apply()
        return sum(len(rows) for rows in batches.values())

    def _insert(self, table: str, rows: list[list]) -> None:
        try:
            with self._client_lock:
                self._insert_locked(table, rows)
        except Exception as error:
            raise StorageError(f"insert of {len(rows)} rows into {table} at {describe_dsn(self.dsn)} "
                               f"failed: {error}") from error
        self.stats.rows[table] += len(rows)
        self.stats.batches += 1

    def _insert_locked(self, table: str, rows: list[list]) -> None:
        if table in ROW_BINARY_TABLES:
            self.client.raw_insert(f"{self.database}.{table}", list(COLUMNS[table]),
                                   ROW_BINARY_TABLES[table](rows), fmt="RowBinary")
        else:
            self.client.insert(f"{self.database}.{table}", rows, column_names=list(COLUMNS[table]))

    def close(self) -> None:
        self.flush()
        self.client.close()


class ClickHouseReader:
    """Queries an existing Reveal database without creating anything: one reading statement at a time unless
    `writable` (see sinks.read_only)."""

    def __init__(self, dsn: str, database: str = "reveal", writable: bool = False):
        if not _IDENTIFIER.match(database):
            raise StorageError(f"database name {database!r} must be a plain identifier")
        self.dsn, self.database, self.writable = dsn, database, writable
        self.client = connect(dsn, create=False)
        _, rows = self.query("SELECT count() FROM system.databases WHERE name = {name:String}", {"name": database})
        if not rows[0][0]:
            self.client.close()
            raise StorageError(f"{describe_dsn(dsn)} holds no database {database!r}: not a Reveal data store")
        self.client.command(f"USE {database}")
        self.client.database = database

    def query(self, sql: str, parameters: dict | None = None):
        """Runs a query with bound parameters; returns (column names, rows)."""
        return run_query(self.client, self.dsn, sql, parameters, not self.writable)

    def close(self) -> None:
        self.client.close()


def run_query(client, dsn: str, sql: str, parameters: dict | None, read_only: bool,
              lock: threading.Lock | None = None):
    """(column names, rows) of a query with bound parameters, refusing anything but one reading statement when
    `read_only` (see sinks.read_only); `lock` keeps one statement at a time on a shared client."""
    held = lock or contextlib.nullcontext()
    try:
        if read_only:
            with held:
                check_read_only(sql, lambda statement: explain_ast(client, statement, parameters))
        else:
            single_statement(sql)
        with held:
            result = client.query(sql, parameters=parameters)
    except WriteRefused as refusal:
        raise StorageError(f"refused on {describe_dsn(dsn)}: {refusal}") from None
    except Exception as error:
        raise StorageError(f"query failed on {describe_dsn(dsn)}: {_first_line(error)}") from error
    return result.column_names, result.result_rows


def explain_ast(client, statement: str, parameters: dict | None) -> list[str]:
    """ClickHouse's parse of one statement, a line per node (nothing runs)."""
    return [row[0] for row in client.query(f"EXPLAIN AST {statement}", parameters=parameters).result_rows]


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
