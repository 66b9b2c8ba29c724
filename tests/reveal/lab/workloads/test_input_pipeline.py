"""The input pipeline on real files: the data set made once and repaired, batches read and logged as steps, and every
file read once per epoch in a seeded order."""

from __future__ import annotations

import signal

import pytest

from reveal.lab.workloads import ensure_files, epoch_order
from tests.reveal.lab.workloads.running import finish, start_workload, wait_for_lines

pytestmark = pytest.mark.timeout(30)


def test_ensure_files_creates_the_data_set_once_and_repairs_short_files(tmp_path):
    paths = ensure_files(tmp_path / "data", 3, 100_000)
    assert [path.stat().st_size for path in paths] == [100_000] * 3
    created = [path.stat().st_mtime_ns for path in paths]
    paths[1].write_bytes(b"short")
    again = ensure_files(tmp_path / "data", 3, 100_000)
    assert again == paths and [path.stat().st_size for path in again] == [100_000] * 3
    assert again[0].stat().st_mtime_ns == created[0] and again[2].stat().st_mtime_ns == created[2]
    assert sorted(path.name for path in (tmp_path / "data").iterdir()) == sorted(path.name for path in paths)


def test_input_reads_batches_of_files_and_logs_steps(tmp_path):
    log = tmp_path / "input.jsonl"
    process = start_workload("input", "--data-dir", tmp_path / "data", "--files", 3, "--file-mb", 1,
                             "--batch-files", 2, "--compute-ms", 10, "--step-ms", 100, "--duration", 20, "--log", log)
    lines = wait_for_lines(log, 5, timeout_s=8.0)
    process.send_signal(signal.SIGTERM)
    status, stderr = finish(process)
    assert status == 0, stderr
    assert len(lines) >= 5, stderr
    assert sorted(path.stat().st_size for path in (tmp_path / "data").iterdir()) == [1 << 20] * 3
    for line in lines:
        assert (line["files"], line["bytes"]) == (2, 2 << 20)
        assert line["read_s"] > 0 and line["compute_s"] > 0


def test_each_epoch_reads_every_file_once_in_its_own_seeded_order():
    first, second = epoch_order(16, 0, seed=5), epoch_order(16, 1, seed=5)
    assert sorted(first) == sorted(second) == list(range(16))
    assert first != second and first == epoch_order(16, 0, seed=5) and first != epoch_order(16, 0, seed=6)
