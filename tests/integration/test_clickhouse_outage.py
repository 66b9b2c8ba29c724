"""ClickHouse refuses inserts for a while (its table folders made immutable, as a read-only or failing disk would):
the worker keeps rows queued, retries with backoff, pauses consumption when its queue is full, says so once per
change, and writes everything once ClickHouse accepts inserts again."""

import re
import subprocess
import time
from pathlib import Path

import pytest

from producers.synthetic import synthetic_catalog, synthetic_frames
from schemas.records import encode_catalog, encode_frame
from schemas.topics import TopicNames, ensure_topics
from stream_jobs.engine.host_pipeline import EngineSettings
from stream_jobs.host_stage import HostStage
from tests.integration.kafka_io import publish
from tests.integration.test_pipeline_end_to_end import sql
from tests.integration.worker_process import WorkerProcess, worker_args

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000_000_000
HOSTS = ("outage-a", "outage-b")
FRAMES_PER_HOST = 600
MAX_PENDING_ROWS = 400
OUTAGE_S = 20.0


def table_folders(data: Path) -> list[Path]:
    return [path.resolve() for path in (data / "data" / "reveal").iterdir()]


def set_immutable(folders: list[Path], on: bool) -> None:
    """chattr ±i: even root cannot create a part in an immutable folder."""
    subprocess.run(["chattr", "+i" if on else "-i", *map(str, folders)], check=True)


def wait_for_tables(data: Path, timeout_s: float = 60.0) -> list[Path]:
    deadline = time.monotonic() + timeout_s
    while not (data / "data" / "reveal" / "baselines").exists():
        assert time.monotonic() < deadline, "the worker did not create its tables"
        time.sleep(0.1)
    return table_folders(data)


def expected_windows(catalogs, frames_by_host) -> set[tuple[str, int]]:
    stage = HostStage(EngineSettings(warmup_s=30))
    for catalog in catalogs:
        stage.on_catalog(catalog)
    return {(row[0], row[2]) for frames in frames_by_host for frame in frames
            for row in stage.on_frame(frame).window_rows}


def test_worker_holds_rows_while_clickhouse_refuses_them_then_writes_everything(kafka_bootstrap, topic_prefix,
                                                                              tmp_path):
    names = TopicNames(topic_prefix)
    ensure_topics({"bootstrap.servers": kafka_bootstrap}, names)
    catalogs = [synthetic_catalog(host, cluster="outage") for host in HOSTS]
    frames_by_host = [synthetic_frames(c, T0, FRAMES_PER_HOST, seed=i) for i, c in enumerate(catalogs)]
    for catalog, frames in zip(catalogs, frames_by_host):
        publish(kafka_bootstrap, names.catalog, [(catalog.host.encode(), encode_catalog(catalog))])
        publish(kafka_bootstrap, names.samples, [(catalog.host.encode(), encode_frame(f)) for f in frames])

    data = tmp_path / "clickhouse"
    worker = WorkerProcess(tmp_path / "worker.log", *worker_args(
        kafka_bootstrap, f"chdb://{data}", topic_prefix, "worker", "--until-idle", "6", "--duration", "85",
        "--max-pending-rows", str(MAX_PENDING_ROWS), "--storage-retry-max", "2"))
    folders = wait_for_tables(data)
    worker.wait_for("catalogs known before the first frame")  # tables made and retention set: now refuse inserts
    set_immutable(folders, True)
    try:
        worker.wait_for("ClickHouse unavailable")
        worker.wait_for("consumption paused")
        time.sleep(OUTAGE_S)
    finally:
        set_immutable(folders, False)
    assert worker.finish() == 0, worker.text()[-3000:]

    log = worker.text()
    outage = log[log.index("ClickHouse unavailable"):log.index("consumption resumed")]
    assert log.count("ClickHouse unavailable") == 1 and log.count("ClickHouse writable again") == 1
    assert outage.count("consumption paused") == 1, f"each change is logged once, not once per attempt:\n{outage}"
    failed_attempts = int(re.search(r"writable again after [\d.]+ s and (\d+) failed attempts", log).group(1))
    assert 5 <= failed_attempts <= OUTAGE_S / 2 + 6, "attempts back off (0.5, 1, 2, 2, … s), not one per flush"
    waiting = [int(n) for n in re.findall(r"(\d+) rows waiting for ClickHouse", log)]
    assert max(waiting) <= MAX_PENDING_ROWS + 50, "the queue stays bounded while consumption is paused"

    frames = sql(f"chdb://{data}", "SELECT host, count() AS n, uniqExact(sequence) AS sequences FROM frames FINAL "
                                   "GROUP BY host ORDER BY host")
    assert frames == [{"host": h, "n": FRAMES_PER_HOST, "sequences": FRAMES_PER_HOST} for h in HOSTS]
    windows = sql(f"chdb://{data}", "SELECT host, window_id FROM windows FINAL")
    assert {(w["host"], w["window_id"]) for w in windows} == expected_windows(catalogs, frames_by_host)
    assert len(windows) == len({(w["host"], w["window_id"]) for w in windows})
