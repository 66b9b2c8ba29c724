"""What every workload shares: its peers' addresses, the stop it polls, the JSON lines it writes and the fixed
amount of compute it runs per step or request."""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from typing import NamedTuple

import numpy as np

MIB = 1 << 20


class Endpoint(NamedTuple):
    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Endpoint:
        """'10.251.0.11:29500' → Endpoint('10.251.0.11', 29500)."""
        host, sep, port = text.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{text!r} is not ADDR:PORT (example: 10.251.0.11:29500)")
        return cls(host, int(port))

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"

    __repr__ = __str__


class Stop:
    """Set by SIGTERM/SIGINT, by `set()`, or when the duration runs out; loops poll it and sleep on it, so a stop
    is noticed within one poll."""

    def __init__(self, duration_s: float | None = None):
        self._event = threading.Event()
        self._deadline = time.monotonic() + duration_s if duration_s else None

    def install_signal_handlers(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: self._event.set())

    @staticmethod
    def ignore_late_signals() -> None:
        """Once the workload has stopped, a stop signal has nothing left to stop; ignored, it cannot kill the
        interpreter while it shuts down (Python's own handlers are gone by then) and turn a clean exit into -15."""
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, signal.SIG_IGN)

    def set(self) -> None:
        self._event.set()

    def __call__(self) -> bool:
        if self._deadline is not None and time.monotonic() >= self._deadline:
            self._event.set()
        return self._event.is_set()

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`, less when stopped or at the deadline; True when stopped."""
        if self._deadline is not None:
            seconds = min(seconds, self._deadline - time.monotonic())
        if seconds > 0:
            self._event.wait(seconds)
        return self()


class JsonLines:
    """One JSON object per line to a file (appended, so a restarted workload keeps earlier lines) or stdout."""

    def __init__(self, path: str | None = None):
        self._file = open(path, "a", buffering=1) if path else sys.stdout

    def write(self, record: dict) -> None:
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not sys.stdout:
            self._file.close()


class MatmulWork:
    """A fixed amount of compute: `repeats` float32 matmuls of `size`×`size`. Fixed work, not fixed time, so CPU
    contention shows as a longer compute phase, as it would on a real host."""

    def __init__(self, size: int, repeats: int, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.left = rng.standard_normal((size, size), dtype=np.float32)
        self.right = rng.standard_normal((size, size), dtype=np.float32) / np.float32(np.sqrt(size))
        self.repeats = repeats

    @classmethod
    def calibrated(cls, size: int, target_s: float, seed: int = 0) -> MatmulWork:
        """As many matmuls as take about `target_s` on this machine now (none for a target of zero)."""
        work = cls(size, 1, seed)
        _run_for(work.run, 0.05)
        runs, elapsed_s = _run_for(work.run, 0.1)
        work.repeats = round(target_s * runs / elapsed_s) if target_s > 0 else 0
        return work

    def run(self) -> float:
        """Do the matmuls; the checksum of the last keeps the work from being optimised away."""
        product = None
        for _ in range(self.repeats):
            product = self.left @ self.right
        return float(product[0, 0]) if product is not None else 0.0


def _run_for(function, seconds: float) -> tuple[int, float]:
    """Call `function` repeatedly for about `seconds`: (calls, seconds taken)."""
    started = time.perf_counter()
    runs = 0
    while (elapsed_s := time.perf_counter() - started) < seconds:
        function()
        runs += 1
    return runs, elapsed_s


def now() -> float:
    return round(time.time(), 6)


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
