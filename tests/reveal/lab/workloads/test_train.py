"""Data-parallel training as separate processes over 127.0.0.1: ranks log their steps and stop cleanly on SIGTERM,
ranks given a matmul count do the same work with evaluation passes and checkpoints, and a peer that never appears is
named within the timeout."""

from __future__ import annotations

import signal
import time

import pytest

from reveal.lab.workloads import Endpoint
from tests.reveal.lab.workloads.running import LOCAL, finish, free_port, read_lines, start_workload, wait_for_lines

pytestmark = pytest.mark.timeout(30)


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
