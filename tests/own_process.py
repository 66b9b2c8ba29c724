"""chDB opens one data folder per process, and each test process already holds the session's (the chdb_dsn
fixture): a test that stores into a data folder of its own does it in a process of its own."""

from __future__ import annotations

import multiprocessing
from typing import Callable


def in_own_process(function: Callable[..., None], *args, timeout_s: float = 300.0) -> None:
    """Run a module-level function in a fresh Python process; its failure (its traceback printed there) fails the
    test."""
    process = multiprocessing.get_context("spawn").Process(target=function, args=args)
    process.start()
    process.join(timeout_s)
    if process.is_alive():
        process.kill()
        raise AssertionError(f"{function.__name__} did not finish within {timeout_s:g} s in its own process")
    assert process.exitcode == 0, f"{function.__name__} failed in its own process (exit {process.exitcode}; see above)"
