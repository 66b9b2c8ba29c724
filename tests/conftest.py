"""Shared fixtures: the real Kafka broker, one embedded ClickHouse per test process, and canned /proc text."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
BOOTSTRAP = os.environ.get("REVEAL_TEST_BOOTSTRAP", "127.0.0.1:9092")


def broker_reachable(bootstrap: str, timeout_s: float = 5.0) -> str | None:
    """None when the broker answers, otherwise why it did not."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    try:
        AdminClient({"bootstrap.servers": bootstrap, "log_level": 0}).list_topics(timeout=timeout_s)
    except KafkaException as error:
        return str(error)
    return None


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
