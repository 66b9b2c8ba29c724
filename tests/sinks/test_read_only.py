"""Telling a read from a write before it runs, with ClickHouse's own parser (real embedded ClickHouse): one statement
that only reads passes; a statement that changes data or settings, writes a file or reaches outside the database is
refused, and nothing runs; what lies in a literal or a comment is not read as SQL."""

import pytest

from sinks.clickhouse import ClickHouseWriter, explain_ast
from sinks.read_only import WriteRefused, check_read_only, single_statement


@pytest.fixture
def writer(chdb_dsn, database):
    writer = ClickHouseWriter(chdb_dsn, database)
    yield writer
    writer.close()


@pytest.fixture
def parse(writer):
    """EXPLAIN AST of a statement (parsing only: nothing runs)."""
    return lambda statement: explain_ast(writer.client, statement, None)


@pytest.mark.parametrize("sql", ["SELECT count() FROM frames", "SELECT 1 UNION ALL SELECT 2", "SHOW TABLES",
                                 "DESCRIBE TABLE frames", "EXISTS TABLE frames", "SELECT * FROM numbers(3);",
                                 "SELECT 'INTO OUTFILE; DROP TABLE frames' -- ; a comment"])
def test_one_reading_statement_passes(parse, sql):
    check_read_only(sql, parse)


@pytest.mark.parametrize("sql", ["DROP TABLE frames", "TRUNCATE TABLE frames",
                                 "INSERT INTO frames SELECT * FROM frames", "ALTER TABLE frames DELETE WHERE 1",
                                 "SET max_threads = 1"])
def test_a_statement_that_changes_data_or_settings_is_refused_and_nothing_runs(writer, parse, sql):
    writer.add("frames", [["h", "c", 0, 1, 1, [1.0]]])
    writer.flush()
    with pytest.raises(WriteRefused, match="changes data or settings; only reads are allowed"):
        check_read_only(sql, parse)
    assert writer.query("SELECT count() FROM frames")[1] == [(1,)]


def test_writing_a_file_or_reading_outside_the_database_is_refused(parse):
    with pytest.raises(WriteRefused, match="INTO OUTFILE writes a file"):
        check_read_only("SELECT 1 INTO OUTFILE '/tmp/reveal-read-only-test'", parse)
    with pytest.raises(WriteRefused, match=r"the table function file\(\) reaches outside the database"):
        check_read_only("SELECT * FROM file('/etc/hostname', 'LineAsString')", parse)
    with pytest.raises(WriteRefused, match=r"the table function url\(\)"):
        check_read_only("SELECT count() FROM frames WHERE host IN (SELECT * FROM url('http://x/', 'CSV', 'h String'))",
                        parse)


def test_one_statement_at_a_time_though_a_literal_or_comment_may_hold_a_semicolon():
    assert single_statement("  SELECT 1;; ") == "SELECT 1"
    assert single_statement("SELECT ';' /* ; */") == "SELECT ';' /* ; */"
    with pytest.raises(WriteRefused, match="one statement at a time"):
        single_statement("SELECT 1; DROP TABLE frames")
