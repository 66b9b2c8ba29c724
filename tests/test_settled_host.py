"""The wait for a quiet host reads the kernel's socket and page counts as they are written."""

from pathlib import Path

from tests.settled_host import sockets_in_time_wait, unwritten_bytes


def test_time_wait_sockets_are_counted_over_ipv4_and_ipv6(tmp_path: Path):
    (tmp_path / "net").mkdir()
    (tmp_path / "net/sockstat").write_text("sockets: used 120\nTCP: inuse 5 orphan 0 tw 7 alloc 9 mem 2\n"
                                           "UDP: inuse 3 mem 1\n")
    (tmp_path / "net/sockstat6").write_text("TCP6: inuse 2\nUDP6: inuse 1\n")
    assert sockets_in_time_wait(tmp_path) == 7


def test_a_kernel_without_ipv6_counts_ipv4_alone(tmp_path: Path):
    (tmp_path / "net").mkdir()
    (tmp_path / "net/sockstat").write_text("TCP: inuse 1 orphan 0 tw 3 alloc 1 mem 0\n")
    assert sockets_in_time_wait(tmp_path) == 3


def test_unwritten_pages_are_dirty_and_under_writeback(tmp_path: Path):
    (tmp_path / "meminfo").write_text("MemTotal:       24000000 kB\nDirty:              1024 kB\n"
                                      "Writeback:           512 kB\nWritebackTmp:          9 kB\n")
    assert unwritten_bytes(tmp_path) == (1024 + 512) * 1024
