"""The lab's workloads over real sockets on 127.0.0.1 and real files: the ring allreduce sums correctly, each
workload logs its lines, stops cleanly on SIGTERM, and a missing peer fails clearly and in time."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from reveal.lab.workloads import (ClientSettings, Endpoint, PeerUnreachable, Stop, connect_ring, ensure_files,
                                       epoch_order, listen, main, request_rate, ring_allreduce)

pytestmark = pytest.mark.timeout(30)

REPO = Path(__file__).resolve().parents[3]
LOCAL = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOCAL, 0))
        return probe.getsockname()[1]


def allreduce_in_threads(vectors: list[np.ndarray]) -> list[np.ndarray]:
    """Each rank in its own thread, connected as a ring over loopback TCP; every rank's result."""
    listeners = [listen(Endpoint(LOCAL, 0)) for _ in vectors]
    peers = [Endpoint(LOCAL, listener.getsockname()[1]) for listener in listeners]

    def rank_main(rank: int) -> np.ndarray:
        links = connect_ring(rank, peers, listeners[rank], timeout_s=5.0, stop=Stop())
        try:
            return ring_allreduce(vectors[rank], links, timeout_s=5.0)
        finally:
            links.close()

    try:
        with ThreadPoolExecutor(len(vectors)) as pool:
            futures = [pool.submit(rank_main, rank) for rank in range(len(vectors))]
            return [future.result(timeout=15) for future in futures]
    finally:
        for listener in listeners:
            listener.close()


def start_workload(*args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "reveal.lab.workloads", *map(str, args)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen, timeout_s: float = 10.0) -> tuple[int, str]:
    """Exit status and stderr of a workload expected to end within `timeout_s`."""
    try:
        _, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        _, stderr = process.communicate()
        pytest.fail(f"workload still running after {timeout_s} s; stderr:\n{stderr}")
    return process.returncode, stderr


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def wait_for_lines(path: Path, count: int, timeout_s: float) -> list[dict]:
    deadline = time.monotonic() + timeout_s
    while len(lines := read_lines(path)) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    return lines


@pytest.mark.parametrize("world, length", [(2, 1001), (3, 1001), (3, 2), (4, 10)])
def test_ring_allreduce_gives_every_rank_the_sum(world, length):
    vectors = [np.arange(length, dtype=np.float32) * (rank + 1) for rank in range(world)]
    originals = [vector.copy() for vector in vectors]
    expected = np.arange(length, dtype=np.float32) * (world * (world + 1) // 2)
    results = allreduce_in_threads(vectors)
    for result in results:
        np.testing.assert_array_equal(result, expected)
    for vector, original in zip(vectors, originals):
        np.testing.assert_array_equal(vector, original)


def test_ring_allreduce_of_a_gradient_larger_than_socket_buffers():
    rng = np.random.default_rng(7)
    vectors = [rng.standard_normal(1_000_003, dtype=np.float32) for _ in range(3)]
    results = allreduce_in_threads(vectors)
    np.testing.assert_allclose(results[0], np.sum(vectors, axis=0, dtype=np.float64), rtol=1e-5, atol=1e-5)
    for result in results[1:]:
        np.testing.assert_array_equal(result, results[0])


def test_connect_ring_names_the_rank_that_never_connects():
    with listen(Endpoint(LOCAL, 0)) as own, listen(Endpoint(LOCAL, 0)) as silent_peer:
        peers = [Endpoint(LOCAL, own.getsockname()[1]), Endpoint(LOCAL, silent_peer.getsockname()[1])]
        started = time.monotonic()
        with pytest.raises(PeerUnreachable, match=f"rank 1 at {peers[1]}"):
            connect_ring(0, peers, own, timeout_s=1.0, stop=Stop())
    assert time.monotonic() - started < 3.0


def test_train_names_a_peer_that_never_appears_within_the_timeout():
    missing = Endpoint(LOCAL, free_port())
    started = time.monotonic()
    process = start_workload("train", "--rank", 0, "--peers", f"{LOCAL}:{free_port()},{missing}",
                             "--connect-timeout", 1, "--duration", 20)
    status, stderr = finish(process)
    assert status == 1
    assert f"rank 1 at {missing} was not reachable within 1 s" in stderr
    assert time.monotonic() - started < 8.0


def test_train_ranks_log_steps_and_exit_cleanly_on_sigterm(tmp_path):
    peers = f"{LOCAL}:{free_port()},{LOCAL}:{free_port()}"
    logs = [tmp_path / f"rank{rank}.jsonl" for rank in range(2)]
    ranks = [start_workload("train", "--rank", rank, "--peers", peers, "--gradient-mb", 0.5, "--compute-ms", 20,
                            "--accelerator-ms", 100, "--duration", 20, "--log", logs[rank]) for rank in range(2)]
    time.sleep(3.0)
    for process in ranks:
        process.send_signal(signal.SIGTERM)
    for rank, process in enumerate(ranks):
        status, stderr = finish(process)
        assert status == 0, stderr
        lines = read_lines(logs[rank])
        assert len(lines) >= 3, stderr
        assert [line["step"] for line in lines] == list(range(len(lines)))
        for line in lines:
            assert line["rank"] == rank
            assert line["compute_s"] >= 0.1 and line["allreduce_s"] > 0
            assert line["step_s"] == pytest.approx(line["compute_s"] + line["allreduce_s"], abs=1e-3)
            assert line["ts"] == pytest.approx(time.time(), abs=30)


def test_infer_client_logs_the_latency_of_each_request(tmp_path):
    server = Endpoint(LOCAL, free_port())
    log = tmp_path / "client.jsonl"
    serving = start_workload("infer", "serve", "--listen", server, "--response-kb", 8, "--duration", 20)
    client = start_workload("infer", "client", "--server", server, "--rate", 40, "--duration", 2, "--log", log)
    status, stderr = finish(client)
    assert status == 0, stderr
    serving.send_signal(signal.SIGTERM)
    status, stderr = finish(serving)
    assert status == 0, stderr
    lines = read_lines(log)
    assert 40 <= len(lines) <= 90
    assert [line["request"] for line in lines] == list(range(len(lines)))
    assert all(0 < line["latency_s"] < 1 for line in lines)
    assert {(line["request_bytes"], line["response_bytes"]) for line in lines} == {(4096, 8192)}


def test_request_rate_bursts_for_burst_s_every_burst_every():
    settings = ClientSettings(Endpoint(LOCAL, 1), rate=10, burst_every=10, burst_s=2, burst_factor=3)
    rates = {t: request_rate(t, settings) for t in (0, 1, 9.9, 10, 11.9, 12, 20.5, 22.5)}
    assert rates == {0: 10, 1: 10, 9.9: 10, 10: 30, 11.9: 30, 12: 10, 20.5: 30, 22.5: 10}
    assert request_rate(10.5, ClientSettings(Endpoint(LOCAL, 1), rate=10, burst_every=0)) == 10


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


@pytest.mark.parametrize("argv", [
    ["train", "--rank", "2", "--peers", "127.0.0.1:1,127.0.0.1:2"],
    ["train", "--rank", "0", "--peers", "127.0.0.1:1"],
    ["train", "--rank", "0", "--peers", "127.0.0.1:1,127.0.0.1:1"],
    ["train", "--rank", "0", "--peers", "127.0.0.1,127.0.0.1:2"],
    ["infer", "client", "--server", "127.0.0.1:1", "--rate", "0"],
])
def test_command_line_rejects_bad_options(argv, capsys):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_ranks_given_a_matmul_count_do_the_same_work_with_evaluation_passes_and_checkpoints(tmp_path):
    peers = f"{LOCAL}:{free_port()},{LOCAL}:{free_port()}"
    logs = [tmp_path / f"rank{rank}.jsonl" for rank in range(2)]
    ranks = [start_workload("train", "--rank", rank, "--peers", peers, "--gradient-mb", 0.25, "--matmuls", 3,
                            "--accelerator-ms", 20, "--eval-every", 3, "--eval-steps", 2, "--checkpoint-every", 4,
                            "--checkpoint-mb", 1, "--checkpoint-dir", tmp_path / "ckpt", "--duration", 20,
                            "--log", logs[rank]) for rank in range(2)]
    for rank in range(2):
        wait_for_lines(logs[rank], 14, timeout_s=15.0)
    for process in ranks:
        process.send_signal(signal.SIGTERM)
    for rank, process in enumerate(ranks):
        status, stderr = finish(process)
        assert status == 0, stderr
        assert "3 matmuls per step" in stderr
        lines = read_lines(logs[rank])
        evals = [line["step"] for line in lines if line.get("phase") == "eval"]
        checkpoints = [line for line in lines if line.get("phase") == "checkpoint"]
        assert evals[:2] == [3, 6] and [c["step"] for c in checkpoints][:1] == [4]
        assert checkpoints[0]["bytes"] == 1 << 20
        assert (tmp_path / "ckpt" / f"rank-{rank}.ckpt").stat().st_size == 1 << 20


def test_each_epoch_reads_every_file_once_in_its_own_seeded_order():
    first, second = epoch_order(16, 0, seed=5), epoch_order(16, 1, seed=5)
    assert sorted(first) == sorted(second) == list(range(16))
    assert first != second and first == epoch_order(16, 0, seed=5) and first != epoch_order(16, 0, seed=6)


def test_checkpoints_need_a_folder():
    with pytest.raises(SystemExit):
        main(["train", "--rank", "0", "--peers", "127.0.0.1:1,127.0.0.1:2", "--checkpoint-every", "5"])


def test_stop_ends_a_wait_at_the_deadline():
    started = time.monotonic()
    assert Stop(duration_s=0.2).wait(5.0) is True
    assert time.monotonic() - started < 1.0
