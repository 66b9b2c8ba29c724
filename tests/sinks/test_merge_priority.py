import ctypes
import os
import threading
import time
from pathlib import Path

from producers.synthetic import synthetic_catalog, synthetic_frames
from sinks.clickhouse import ClickHouseWriter
from sinks.merge_priority import MERGE_NICE_STEP, MERGE_THREAD_NAMES, MergeThreadPriority
from sinks.rows import frame_row

T0 = 1_700_000_000_000_000_000
PR_SET_NAME = 15


def merge_thread_nices() -> dict[int, int]:
    """This process's merge threads and their nice values, read back from the kernel."""
    nices = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            if (task / "comm").read_text().strip().startswith(MERGE_THREAD_NAMES):
                nices[int(task.name)] = os.getpriority(os.PRIO_PROCESS, int(task.name))
        except OSError:  # the thread ended while it was read
            pass
    return nices


def test_the_embedded_clickhouses_merges_run_nicer_than_the_process_that_stores(chdb_dsn, database):
    writer = ClickHouseWriter(chdb_dsn, database)
    try:
        frames = synthetic_frames(synthetic_catalog("nice-host"), T0, 60)
        for start in range(0, 60, 10):  # a part per flush: enough parts for merges to start
            writer.add("frames", [frame_row(frame) for frame in frames[start:start + 10]])
            writer.flush()
        deadline = time.monotonic() + 20
        while not merge_thread_nices() and time.monotonic() < deadline:
            time.sleep(0.2)
            writer.flush()
        nices = merge_thread_nices()
        expected = min(19, os.getpriority(os.PRIO_PROCESS, os.getpid()) + MERGE_NICE_STEP)
        assert nices and set(nices.values()) == {expected}
    finally:
        writer.close()


def named_thread(name: str, started: threading.Event, stop: threading.Event) -> threading.Thread:
    """A thread the kernel knows by `name` (prctl PR_SET_NAME), as chDB names its pools' threads."""
    def run():
        ctypes.CDLL(None).prctl(PR_SET_NAME, name.encode(), 0, 0, 0)
        started.set()
        stop.wait(30)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_threads_of_other_names_keep_their_priority():
    stop = threading.Event()
    merging, other = threading.Event(), threading.Event()
    threads = [named_thread("MergeMutate", merging, stop), named_thread("QueryPool", other, stop)]
    try:
        assert merging.wait(5) and other.wait(5)
        priority = MergeThreadPriority()
        base = os.getpriority(os.PRIO_PROCESS, os.getpid())
        assert priority.apply() >= 1
        assert os.getpriority(os.PRIO_PROCESS, threads[0].native_id) == min(19, base + MERGE_NICE_STEP)
        assert os.getpriority(os.PRIO_PROCESS, threads[1].native_id) == base
        assert priority.apply() == 0  # each thread is looked at once
    finally:
        stop.set()
