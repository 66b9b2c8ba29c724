"""The worker shell's storage loop against real embedded ClickHouse: records are released only after their rows
are stored; failed inserts back off and are logged once per change of state; a full queue pauses the input."""

import asyncio
import logging
import subprocess
from pathlib import Path
from urllib.parse import urlparse

from sinks.landing import open_landing
from stream_jobs.worker.shell import WorkerSettings, WorkerShell


def shell_for(chdb_dsn: str, database: str, max_pending_rows: int = 50_000, **settings) -> WorkerShell:
    return WorkerShell(WorkerSettings("127.0.0.1:1", **settings),
                       lambda: open_landing(chdb_dsn, database, max_pending_rows))


def frames_folder(chdb_dsn: str, database: str) -> str:
    return str((Path(urlparse(chdb_dsn).path) / "data" / database / "frames").resolve())


def test_records_are_released_only_after_a_successful_flush_and_failures_back_off(chdb_dsn, database, caplog):
    shell = shell_for(chdb_dsn, database, storage_retry_max_s=4.0)
    acknowledged = []
    shell.acknowledge = lambda partition, offset: acknowledged.append((partition, offset))
    shell.releases.consumed("catalog-0", 7)
    shell.store.writer.add("frames", [["h", "c", 0, 1, 1, [1.0]]])
    caplog.set_level(logging.INFO, logger="stream_jobs.worker.shell")
    folder = frames_folder(chdb_dsn, database)
    subprocess.run(["chattr", "+i", folder], check=True)  # even root cannot add a part to an immutable folder
    try:
        asyncio.run(shell.flush())
        assert not acknowledged and shell.backoff.failures == 1
        asyncio.run(shell.flush())  # not due yet: no attempt
        shell.backoff.next_attempt_at = 0.0
        asyncio.run(shell.flush())
    finally:
        subprocess.run(["chattr", "-i", folder], check=True)
    assert shell.backoff.failures == 2 and shell.counters.storage_errors == 2
    assert caplog.text.count("ClickHouse unavailable") == 1 and shell.store.pending_rows() == 1

    shell.backoff.next_attempt_at = 0.0
    asyncio.run(shell.flush())
    assert acknowledged == [("catalog-0", 7)] and not shell.backoff.failing and shell.store.pending_rows() == 0
    assert caplog.text.count("ClickHouse writable again after") == 1


def test_a_full_queue_is_written_at_once_while_clickhouse_is_healthy(chdb_dsn, database):
    shell = shell_for(chdb_dsn, database, max_pending_rows=2)
    shell.store.writer.add("frames", [["h", "c", 0, 1, 1, [1.0]], ["h", "c", 0, 2, 1, [1.0]]])
    asyncio.run(shell.wait_for_room())
    assert shell.store.pending_rows() == 0 and not shell.paused


def test_a_full_queue_pauses_input_while_clickhouse_refuses_rows(chdb_dsn, database, caplog):
    shell = shell_for(chdb_dsn, database, max_pending_rows=2)
    shell.store.writer.add("frames", [["h", "c", 0, 1, 1, [1.0]], ["h", "c", 0, 2, 1, [1.0]]])
    caplog.set_level(logging.INFO, logger="stream_jobs.worker.shell")
    folder = frames_folder(chdb_dsn, database)

    async def input_waits_for_storage():
        subprocess.run(["chattr", "+i", folder], check=True)
        try:
            await shell.flush()
            waiting = asyncio.create_task(shell.wait_for_room())
            await asyncio.sleep(0.3)
            assert not waiting.done() and shell.paused
        finally:
            subprocess.run(["chattr", "-i", folder], check=True)
        shell.backoff.next_attempt_at = 0.0
        await shell.flush()
        await asyncio.wait_for(waiting, 2.0)

    asyncio.run(input_waits_for_storage())
    assert not shell.paused and caplog.text.count("consumption paused") == 1
    assert caplog.text.count("consumption resumed") == 1


def test_an_operators_stop_leaves_open_incidents_open_and_the_end_of_a_run_closes_them(chdb_dsn, database):
    """SIGTERM hands the hosts to another worker, which carries their incidents on; the end of a run closes them."""
    alerts_written = {}
    for run_ends in (False, True):
        shell = shell_for(chdb_dsn, f"{database}_{int(run_ends)}")
        for window in (1, 2):
            shell.cluster.incidents.update("h1", window, window * 10**9, (window + 3) * 10**9, True, 5.0, "cpu",
                                           [("cpu.busy", "mean", 6.0)])
        assert shell.cluster.incidents.open_count() == 1
        shell.close(close_incidents=run_ends)
        alerts_written[run_ends] = shell.store.rows_written["alerts"]
    assert alerts_written == {False: 0, True: 1}
