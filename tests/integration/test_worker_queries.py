"""A worker storing in an embedded data folder answers read-only queries for it while it runs, as `reveal run`
does, and a folder keeps one kind of run's data."""

import signal
import subprocess
import sys

import pytest

from schemas.topics import TopicNames, ensure_topics
from tests.integration.worker_process import WorkerProcess, worker_args

pytestmark = pytest.mark.integration


def reveal(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reveal.cli", *args], capture_output=True, text=True, timeout=120)


def test_sql_reads_a_running_workers_folder_and_an_embedded_run_is_kept_out_of_it(kafka_bootstrap, topic_prefix,
                                                                                   tmp_path):
    ensure_topics({"bootstrap.servers": kafka_bootstrap}, TopicNames(topic_prefix))
    data_dir = tmp_path / "reveal-data"
    worker = WorkerProcess(tmp_path / "worker.log",
                           *worker_args(kafka_bootstrap, f"chdb://{data_dir / 'clickhouse'}", topic_prefix, "q"))
    try:
        worker.wait_for("read-only queries of", timeout_s=90)
        answered = reveal("sql", "--data-dir", str(data_dir), "--format", "tsv", "SELECT count() AS n FROM windows")
        assert answered.returncode == 0 and answered.stdout.splitlines() == ["n", "0"], answered.stderr[-2000:]
        through_dsn = reveal("sql", "--clickhouse", f"chdb://{data_dir / 'clickhouse'}", "SELECT 1 AS one")
        assert through_dsn.returncode == 0 and "one" in through_dsn.stdout, through_dsn.stderr[-2000:]
    finally:
        worker.signal(signal.SIGTERM)
        worker.finish()
    refused = reveal("run", "--duration", "2", "--data-dir", str(data_dir), "--listen", "127.0.0.1:0")
    told = [line for line in refused.stderr.splitlines() if line.startswith("reveal run:")]
    assert refused.returncode == 2 and len(told) == 1 and "reveal worker" in told[0], refused.stderr[-2000:]


def test_a_worker_is_kept_out_of_an_embedded_runs_folder_before_it_connects(tmp_path):
    data_dir = tmp_path / "reveal-data"
    data_dir.mkdir()
    (data_dir / "mode").write_text("embedded\n")
    refused = reveal("worker", "--bootstrap", "127.0.0.1:1", "--clickhouse", f"chdb://{data_dir / 'clickhouse'}")
    told = [line for line in refused.stderr.splitlines() if line.startswith("reveal worker:")]
    assert refused.returncode == 2 and len(told) == 1 and "reveal run" in told[0], refused.stderr[-2000:]
