"""The contract a sink fulfils for the stream shells: the landing over ClickHouse offers every member a result store
declares, with the same parameters, and its errors are the StorageUnavailable the shells wait out."""

import inspect

from sinks.clickhouse import StorageError
from sinks.landing import ClickHouseLanding
from stream_jobs.storage import ResultStore, StorageUnavailable

ATTRIBUTES = {"max_pending_rows", "rows_written"}


def declared(protocol) -> set[str]:
    return {name for name in vars(protocol) if not name.startswith("_")} | set(protocol.__annotations__)


def test_a_result_store_declares_what_the_shells_call():
    assert declared(ResultStore) == {"max_pending_rows", "store_catalog", "store_frame", "store_output", "flush",
                                     "pending_rows", "is_full", "rows_written", "embedded_memory_bytes",
                                     "saved_baseline", "close"}


def test_the_clickhouse_landing_offers_every_member_of_a_result_store_with_its_parameters():
    assert [name for name in declared(ResultStore) if not hasattr(ClickHouseLanding, name)] == []
    for name in declared(ResultStore) - ATTRIBUTES:
        promised = inspect.signature(getattr(ResultStore, name)).parameters
        assert list(inspect.signature(getattr(ClickHouseLanding, name)).parameters) == list(promised), name


def test_a_storage_error_is_what_the_shells_wait_out():
    assert issubclass(StorageError, StorageUnavailable) and issubclass(StorageUnavailable, RuntimeError)
