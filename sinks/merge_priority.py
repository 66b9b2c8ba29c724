"""The embedded ClickHouse's merges at a lower CPU priority than the process that stores through it.

chDB merges the frames it stores on threads of the process that stores them: a worker's event loop, or `reveal run`
on a host whose workload Reveal watches. A ClickHouse server gives its merge threads a nice value of their own
(`os_threads_nice_value_merge_mutate`); chDB takes no server settings, so its merge threads are found by name and
given one here. Merges then use the cores that are left and still run as fast where cores are free.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

MERGE_THREAD_NAMES = ("MergeMutate",)  # the pool that runs ClickHouse's background merges and mutations
MERGE_NICE_STEP = 10  # merge threads run this much nicer than the process (at most 19, Linux's lowest priority)


class MergeThreadPriority:
    """Lowers the priority of this process's merge threads, each once; `apply()` is cheap enough for every flush
    (it reads the names of threads it has not seen before, and nothing else)."""

    def __init__(self, step: int = MERGE_NICE_STEP, tasks: Path = Path("/proc/self/task")):
        self.step = step
        self.tasks = tasks
        self._seen: set[str] = set()

    def apply(self) -> int:
        """Give merge threads started since the last call the lower priority; returns how many were lowered."""
        try:
            tasks = set(os.listdir(self.tasks))
        except OSError:  # no procfs: nothing to find
            return 0
        self._seen &= tasks  # a thread that ended may have its id taken by a new one
        lowered = 0
        for task in tasks - self._seen:
            self._seen.add(task)
            if _thread_name(self.tasks / task).startswith(MERGE_THREAD_NAMES) and self._lower(int(task)):
                lowered += 1
        return lowered

    def _lower(self, thread_id: int) -> bool:
        try:
            nice = min(19, os.getpriority(os.PRIO_PROCESS, os.getpid()) + self.step)
            os.setpriority(os.PRIO_PROCESS, thread_id, max(nice, os.getpriority(os.PRIO_PROCESS, thread_id)))
        except OSError as error:  # the thread ended, or the process may not change it
            log.debug("merge thread %d keeps its priority (%s)", thread_id, error)
            return False
        return True


def _thread_name(task: Path) -> str:
    try:
        return (task / "comm").read_text().strip()
    except OSError:
        return ""
