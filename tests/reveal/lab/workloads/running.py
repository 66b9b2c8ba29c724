"""The lab's workloads as separate processes for their tests: a free port on 127.0.0.1, a workload started and waited
for, and the JSON lines it logged."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[4]
LOCAL = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOCAL, 0))
        return probe.getsockname()[1]


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
