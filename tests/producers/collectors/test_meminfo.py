"""MemInfoCollector over /proc/meminfo captured from a Linux 6.x VM."""

from producers.collectors.meminfo import MemInfoCollector


def test_meminfo_converts_kb_to_bytes_and_keeps_hugepage_counts(procfs):
    collector = MemInfoCollector(procfs)
    values = collector.collect()
    text = (procfs / "meminfo").read_text()
    mem_total_kb = float(text.split("MemTotal:")[1].split()[0])
    assert values["mem.MemTotal"] == mem_total_kb * 1024
    assert collector.describe("mem.MemTotal").kind == "static"
    assert collector.describe("mem.HugePages_Free").unit == "pages"
