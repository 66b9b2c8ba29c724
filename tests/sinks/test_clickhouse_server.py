"""The http(s):// path against a real ClickHouse server: tables created, an embedded run's output stored, and every
retrospective answered. Runs where REVEAL_TEST_CLICKHOUSE_URL names a server (e.g. http://reveal:pw@host:8123);
elsewhere the conftest leaves it out of the run (no server installs from the registries CI reaches)."""

import os
import uuid

import pytest

from sinks import retrospectives
from sinks.clickhouse import ClickHouseReader, ClickHouseWriter

pytestmark = pytest.mark.clickhouse_server
SERVER = os.environ.get("REVEAL_TEST_CLICKHOUSE_URL", "")


@pytest.fixture(scope="module")
def server_database():
    from tests.conftest import store_recorded_run

    database = f"reveal_test_{uuid.uuid4().hex[:8]}"
    writer = ClickHouseWriter(SERVER, database, max_pending_rows=10**7)
    store_recorded_run(writer)
    yield database
    writer.command(f"DROP DATABASE IF EXISTS {database}")
    writer.close()


def test_a_server_stores_an_embedded_run_and_answers_every_retrospective(server_database):
    reader = ClickHouseReader(SERVER, server_database)
    try:
        _, counts = reader.query("SELECT (SELECT count() FROM frames), (SELECT count() FROM windows), "
                                 "(SELECT count() FROM alerts)")
        assert all(count > 0 for count in counts[0])
        for name, retrospective in retrospectives.retrospectives().items():
            given = {"host": "h1", "channel": "cpu.user.all"}
            needed = {p.name for p in retrospective.parameters if p.default is None}
            reader.query(retrospective.sql, retrospective.bound({k: v for k, v in given.items() if k in needed}))
    finally:
        reader.close()
