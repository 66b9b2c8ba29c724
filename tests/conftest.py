"""Shared fixtures: the real Kafka broker, one embedded ClickHouse per test process, and canned /proc text."""

from __future__ import annotations

import os
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
BOOTSTRAP = os.environ.get("REVEAL_TEST_BOOTSTRAP", "127.0.0.1:9092")


def pytest_configure(config):
    """Each test process's Reveal commands note themselves in a folder of its own (inherited by the commands it
    starts), so that a run under test sees only the commands its own tests point at it, also when test processes
    run side by side."""
    if os.environ.get("REVEAL_TEST_COMMANDS_OWNER") != str(os.getpid()):
        import tempfile

        os.environ["REVEAL_COMMANDS_DIR"] = tempfile.mkdtemp(prefix="reveal-test-commands-")
        os.environ["REVEAL_TEST_COMMANDS_OWNER"] = str(os.getpid())


def pytest_unconfigure(config):
    """The commands folder this test process made goes with it."""
    if os.environ.get("REVEAL_TEST_COMMANDS_OWNER") == str(os.getpid()):
        import shutil

        shutil.rmtree(os.environ["REVEAL_COMMANDS_DIR"], ignore_errors=True)


@pytest.fixture(autouse=True)
def settled_host(request) -> None:
    """A test that judges or measures the host (marked quiet_host) starts once what earlier tests left has passed."""
    if request.node.get_closest_marker("quiet_host"):
        from tests.settled_host import wait_until_settled

        wait_until_settled()


def broker_reachable(bootstrap: str, timeout_s: float = 5.0) -> str | None:
    """None when the broker answers, otherwise why it did not."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    try:
        AdminClient({"bootstrap.servers": bootstrap, "log_level": 0}).list_topics(timeout=timeout_s)
    except KafkaException as error:
        return str(error)
    return None


def pytest_collection_modifyitems(config, items):
    """Tests of a ClickHouse server run only where REVEAL_TEST_CLICKHOUSE_URL names one; elsewhere they are left out
    of the run (deselected, never skipped), since no server installs from the registries CI reaches."""
    if os.environ.get("REVEAL_TEST_CLICKHOUSE_URL"):
        return
    left_out = [item for item in items if item.get_closest_marker("clickhouse_server")]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if not item.get_closest_marker("clickhouse_server")]


@pytest.fixture(scope="session")
def kafka_bootstrap() -> str:
    """The real broker's address; a missing broker fails the test, never skips it (bash .ci/run starts one)."""
    problem = broker_reachable(BOOTSTRAP)
    if problem:
        pytest.fail(f"no Kafka broker at {BOOTSTRAP} ({problem}); start one with infra/kafka/start.sh")
    return BOOTSTRAP


@pytest.fixture
def topic_prefix() -> str:
    """A prefix unique to one test, so its topics hold only what it wrote."""
    return f"test-{uuid.uuid4().hex[:10]}."


@pytest.fixture(scope="session")
def chdb_dsn(tmp_path_factory) -> str:
    """chDB allows one data path per process: every in-process test shares it, each in its own database."""
    return f"chdb://{tmp_path_factory.mktemp('chdb')}"


@pytest.fixture
def database() -> str:
    return f"test_{uuid.uuid4().hex[:10]}"


@pytest.fixture
def procfs() -> Path:
    return FIXTURES / "proc"


RECORDED_RUN = FIXTURES / "lab-runs" / "full" / "01-full-train"
PLANTED_CONFIGURATION = ("h6", "snmp.Ip.DefaultTTL", 128.0)  # one host configured unlike its peers (theirs: 64)


def with_planted_configuration(items, host: str, channel: str, value: float):
    """The recorded catalogs and frames, with one constant channel of one host set to another value throughout."""
    from dataclasses import replace

    import numpy as np

    from schemas.records import Catalog

    index = None
    for item in items:
        if isinstance(item, Catalog):
            names = [c.name for c in item.channels]
            index = names.index(channel) if item.host == host and channel in names else index
        elif item.host == host and index is not None:
            values = np.array(item.values, dtype=np.float64)
            values[index] = value
            item = replace(item, values=values)
        yield item


def store_recorded_run(writer) -> None:
    """Run the recorded lab run (with its planted configuration difference) through the embedded runner into
    `writer`, as `reveal run` stores it while it runs: incidents still open are left open."""
    import json

    from schemas.records import Catalog
    from sinks.landing import ClickHouseLanding
    from stream_jobs.embedded import EmbeddedRunner
    from stream_jobs.host_stage import HostStage
    from reveal.lab.ingest import LIVE_MODE, engine_settings_for
    from reveal.lab.replay import merged_recordings

    meta = json.loads((RECORDED_RUN / "run.json").read_text())
    runner = EmbeddedRunner(HostStage(engine_settings_for(meta["baseline_s"], LIVE_MODE, meta["seed"])),
                            ClickHouseLanding(writer), flush_every_s=5.0)
    items = merged_recordings(sorted((RECORDED_RUN / "telemetry").glob("*.avro")))
    for item in with_planted_configuration(items, *PLANTED_CONFIGURATION):
        (runner.on_catalog if isinstance(item, Catalog) else runner.on_frame)(item)
    runner.flush()


def session_folder(tmp_path_factory) -> Path:
    """A folder that every test process of this session shares (test processes side by side each have their own
    base folder inside the session's)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextmanager
def held_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on `path` among this host's processes, held while the block runs."""
    import fcntl

    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def recorded_run_rows(writer, folder: Path) -> dict[str, list]:
    """The rows the embedded runner stores for the recorded run, made once per session by whichever test process
    needs them first (into `writer`, keeping a copy) and read from that copy by the others."""
    import pickle

    kept = folder / "recorded-run-rows.pickle"
    with held_lock(folder / "recorded-run-rows.lock"):
        if kept.exists():
            return pickle.loads(kept.read_bytes())
        rows: dict[str, list] = {}
        add = writer.add

        def keeping_a_copy(table: str, table_rows: list) -> None:
            rows.setdefault(table, []).extend(table_rows)
            add(table, table_rows)

        writer.add = keeping_a_copy
        try:
            store_recorded_run(writer)
        finally:
            del writer.add
        kept.write_bytes(pickle.dumps(rows))
        return {}


@pytest.fixture(scope="session")
def recorded_run(chdb_dsn, tmp_path_factory) -> str:
    """A database filled by the embedded runner from a real recorded lab run (six hosts training, 16 faults, and one
    host's IP default TTL planted unlike its peers'): frames, catalogs, windows, anomalies, incidents and
    retransmission verdicts. Returns the database's name in `chdb_dsn`."""
    from sinks.clickhouse import ClickHouseWriter

    database = "recorded_run"
    writer = ClickHouseWriter(chdb_dsn, database, max_pending_rows=10**7)
    for table, rows in recorded_run_rows(writer, session_folder(tmp_path_factory)).items():
        writer.add(table, rows)
    writer.flush()
    writer.close()
    return database
