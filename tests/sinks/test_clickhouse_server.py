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
    from schemas.records import Catalog
    from stream_jobs.embedded import EmbeddedRunner
    from stream_jobs.host_stage import HostStage
    from stream_jobs.lab.ingest import LIVE_MODE, engine_settings_for
    from tests.conftest import recorded_run_items

    database = f"reveal_test_{uuid.uuid4().hex[:8]}"
    writer = ClickHouseWriter(SERVER, database, max_pending_rows=10**7)
    runner = EmbeddedRunner(HostStage(engine_settings_for(70.0, LIVE_MODE, 7)), writer, flush_every_s=5.0)
    for item in recorded_run_items():
        (runner.on_catalog if isinstance(item, Catalog) else runner.on_frame)(item)
    runner.close()
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
