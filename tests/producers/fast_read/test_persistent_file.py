"""PersistentFile: one descriptor re-read from offset 0, a read size that follows the file, and no descriptor left
behind after an error, a close or the object's collection."""

import gc
import os

import pytest

from producers.fast_read.persistent_file import PersistentFile


def descriptors_open_to(path) -> int:
    """How many of this process's descriptors point at path."""
    count = 0
    for descriptor in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{descriptor}") == str(path)
        except OSError:
            continue
    return count


def test_each_read_sees_the_file_as_it_is_now_through_one_descriptor(tmp_path):
    path = tmp_path / "stat"
    path.write_bytes(b"cpu 1 2 3\n")
    handle = PersistentFile(path)
    assert handle.read() == b"cpu 1 2 3\n"
    descriptor = handle.fileno()
    path.write_bytes(b"cpu 4 5 6 7\n")  # rewritten in place, as procfs regenerates a file at each read
    assert handle.read() == b"cpu 4 5 6 7\n" and handle.fileno() == descriptor
    handle.close()


def test_a_file_larger_than_the_read_size_is_read_whole_and_the_size_follows_the_file(tmp_path):
    path = tmp_path / "interrupts"
    data = b"0123456789abcdef" * 3125  # 50,000 bytes
    path.write_bytes(data)
    handle = PersistentFile(path)
    assert handle.size == 4096
    assert handle.read() == data and handle.size == 2 * len(data)
    path.write_bytes(b"small\n")
    assert handle.read() == b"small\n" and handle.size == 4096
    handle.close()


def test_a_failed_read_closes_the_descriptor_and_the_next_read_opens_the_file_afresh(tmp_path):
    directory = tmp_path / "folder"
    directory.mkdir()
    with pytest.raises(IsADirectoryError):
        PersistentFile(directory).read()
    assert descriptors_open_to(directory) == 0
    path = tmp_path / "value"
    handle = PersistentFile(path)
    with pytest.raises(FileNotFoundError):
        handle.read()
    path.write_bytes(b"7\n")
    assert handle.read() == b"7\n"
    handle.close()


def test_close_and_collection_release_the_descriptor(tmp_path):
    path = tmp_path / "value"
    path.write_bytes(b"1\n")
    handle = PersistentFile(path)
    handle.read()
    assert descriptors_open_to(path) == 1
    handle.close()
    handle.close()
    assert descriptors_open_to(path) == 0
    dropped = PersistentFile(path)
    dropped.read()
    assert descriptors_open_to(path) == 1
    del dropped
    gc.collect()
    assert descriptors_open_to(path) == 0
