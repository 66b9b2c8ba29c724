"""`reveal worker` as a child process for fault tests: started in the background, its log in a file, stopped or
killed on demand, and the chDB folders it wrote read back with `reveal sql`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


class WorkerProcess:
    def __init__(self, log: Path, *args: str):
        self.log = log
        self._log_file = open(log, "w")
        self.process = subprocess.Popen([sys.executable, "-m", "reveal.cli", "worker", *args],
                                        stdout=self._log_file, stderr=subprocess.STDOUT,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1"})

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, needle: str, count: int = 1, timeout_s: float = 60.0) -> None:
        """Wait until the log holds `needle` `count` times; fail with the log's tail if the worker exits first."""
        deadline = time.monotonic() + timeout_s
        while self.text().count(needle) < count:
            assert self.process.poll() is None, f"worker exited early:\n{self.text()[-3000:]}"
            assert time.monotonic() < deadline, f"no {needle!r} ×{count} in {timeout_s} s:\n{self.text()[-3000:]}"
            time.sleep(0.1)

    def signal(self, number: int) -> None:
        self.process.send_signal(number)

    def finish(self, timeout_s: float = 90.0) -> int:
        """Wait for the worker to exit (SIGKILL after `timeout_s`); returns its exit status."""
        try:
            return self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)
            raise AssertionError(f"worker did not stop within {timeout_s} s:\n{self.text()[-3000:]}") from None
        finally:
            self._log_file.close()


def worker_args(bootstrap: str, dsn: str, topic_prefix: str, group: str, *extra: str) -> tuple[str, ...]:
    return ("--bootstrap", bootstrap, "--clickhouse", dsn, "--topic-prefix", topic_prefix,
            "--group", f"{topic_prefix}{group}", "--warmup", "30", *extra)
