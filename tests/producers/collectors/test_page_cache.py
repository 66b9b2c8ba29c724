"""The page cache of a folder's files, counted by the kernel on this host's real files (cachestat, Linux 6.5+)."""

import os
from pathlib import Path

from producers.collectors.own_footprint import OwnStorageCollector
from producers.collectors.page_cache import PAGE_BYTES, counts_page_cache, file_page_cache, folder_page_cache
from schemas.channels import OWN_CACHED_BYTES, OWN_DIRTY_BYTES, OWN_WRITEBACK_BYTES

MIB = 1 << 20


def written(path: Path, size: int, synced: bool) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as file:
        file.write(os.urandom(size))
        if synced:
            file.flush()
            os.fsync(file.fileno())
    return path


def dropped(path: Path) -> Path:
    """The file's clean pages dropped from the page cache."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(descriptor)
    return path


def test_this_kernel_counts_a_files_page_cache():
    assert counts_page_cache(), "CI's kernel (6.x) has cachestat; a kernel without it leaves the source out"


def test_a_file_just_written_is_cached_and_dropped_pages_are_not(tmp_path):
    path = written(tmp_path / "part.bin", MIB, synced=True)
    assert file_page_cache(path).cached == MIB
    assert file_page_cache(dropped(path)) == (0, 0, 0)


def test_pages_not_yet_written_back_are_dirty(tmp_path):
    cache = file_page_cache(written(tmp_path / "part.bin", 4 * PAGE_BYTES, synced=False))
    assert cache.cached == 4 * PAGE_BYTES and cache.dirty + cache.writeback > 0


def test_a_folders_cache_is_the_sum_over_its_files_at_every_depth(tmp_path):
    written(tmp_path / "store" / "a1e" / "data.bin", MIB, synced=True)
    written(tmp_path / "store" / "b2f" / "marks.cmrk3", 3 * PAGE_BYTES, synced=True)
    dropped(written(tmp_path / "metadata" / "old.sql", MIB, synced=True))
    (tmp_path / "fifo").parent.mkdir(exist_ok=True)
    os.mkfifo(tmp_path / "fifo")  # neither blocks the walk nor counts
    assert folder_page_cache(tmp_path).cached == MIB + 3 * PAGE_BYTES
    assert folder_page_cache(tmp_path / "missing") == (0, 0, 0)


def test_reveals_storage_source_gives_its_data_folders_cache(tmp_path):
    written(tmp_path / "clickhouse" / "data.bin", MIB, synced=True)
    collector = OwnStorageCollector(tmp_path)
    assert collector.available()
    values = collector.collect()
    assert values[OWN_CACHED_BYTES] == MIB and {OWN_DIRTY_BYTES, OWN_WRITEBACK_BYTES} <= values.keys()
    assert collector.describe(OWN_CACHED_BYTES).unit == "bytes"
