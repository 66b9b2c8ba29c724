"""The stored run the report's tests read, written once for the package, and its rendered page."""

from __future__ import annotations

import uuid

import pytest

from reveal.report.contents import gather
from reveal.report.data import ReportStore
from reveal.report.page import render_report
from sinks.clickhouse import ClickHouseWriter
from tests.reveal.report.stored_run import write_run


@pytest.fixture(scope="package")
def run_database(chdb_dsn) -> str:
    database = f"test_report_{uuid.uuid4().hex[:10]}"
    write_run(chdb_dsn, database)
    return database


@pytest.fixture(scope="package")
def report_html(chdb_dsn, run_database) -> str:
    store = ReportStore(ClickHouseWriter(chdb_dsn, run_database), run_database)
    return render_report(gather(store, chdb_dsn))
