"""The agent's scanned files read together (one ScanBatch call a tick, or the compiled loop keeping the schedule for
many ticks) give the frames the collectors' own reads give, and every file the batch cannot vouch for is handed back
to its collector."""

import shutil
import time

import numpy as np
import pytest

from producers.collectors.base import Collector
from producers.collectors.interrupts import InterruptsCollector
from producers.collectors.meminfo import MemInfoCollector
from producers.collectors.vmstat import VmStatCollector
from producers.fast_read import scanned_layout
from producers.registry import CollectorRegistry
from tests.conftest import FIXTURES
from tests.producers.fast_read.test_scanned_layout import ROOTS, TEXT_SOURCES

tokenscan = scanned_layout._tokenscan


def _registries(procfs):
    """The same sources read through the batch and, apart, by their collectors alone."""
    def collectors():
        return [source(procfs) for source in TEXT_SOURCES if (procfs / source.relative).exists()]
    return (CollectorRegistry(collectors(), "h", "c", 0.1),
            CollectorRegistry(collectors(), "h", "c", 0.1, batch_reads=False))


def _same_frames(batched, alone, ticks):
    for tick in ticks:
        frame, changed = batched.sample(tick)
        expected, expected_change = alone.sample(tick)
        assert changed == expected_change
        assert [c.name for c in batched.catalog.channels] == [c.name for c in alone.catalog.channels]
        np.testing.assert_array_equal(frame, expected)


@pytest.mark.parametrize("root", ROOTS)
def test_batched_frames_equal_the_collectors_own_on_every_captured_host(root, tmp_path):
    procfs = tmp_path / root
    shutil.copytree(FIXTURES / root, procfs)
    batched, alone = _registries(procfs)
    _same_frames(batched, alone, range(3))
    in_batch = {s.collector.source for s, _, _ in batched._batched}
    assert "/proc/stat" in in_batch and ("/proc/interrupts" in in_batch) == (procfs / "interrupts").exists()
    for name in ("interrupts", "stat"):
        if (procfs / name).exists():
            (procfs / name).write_text((procfs / name).read_text().replace(" 1 ", " 7 ", 3).replace(" 0 ", " 5 ", 4))
    _same_frames(batched, alone, range(3, 8))


def test_interrupt_totals_add_every_line_of_the_cpu_and_the_busiest_lines_keep_their_own(tmp_path):
    (tmp_path / "interrupts").write_text("           CPU0       CPU1\n  1:         10         20   IO-APIC  timer\n"
                                         "  2:        100        200   IO-APIC  eth0\n  3:          1          2   x\n"
                                         "ERR:          4\n")
    batched = CollectorRegistry([InterruptsCollector(tmp_path, busiest_lines=1)], "h", "c", 0.1)
    batched.sample(0)
    assert batched._batched, "the interrupts summary was not handed to the batch"
    (tmp_path / "interrupts").write_text("           CPU0       CPU1\n  1:         11         22   IO-APIC  timer\n"
                                         "  2:        300        400   IO-APIC  eth0\n  3:          1          3   x\n"
                                         "ERR:          5\n")
    frame, changed = batched.sample(2)
    values = dict(zip((c.name for c in batched.catalog.channels), frame.tolist()))
    assert not changed
    assert values == {"irq.total.cpu0": 312.0, "irq.total.cpu1": 425.0, "irq.2.cpu0": 300.0, "irq.2.cpu1": 400.0,
                      "irq.ERR": 5.0}


def test_a_malformed_value_and_a_new_line_are_handed_back_to_the_collector(tmp_path):
    (tmp_path / "meminfo").write_text("MemTotal: 100 kB\nMemFree: 50 kB\nDirty: 7 kB\n")
    batched, alone = (CollectorRegistry([MemInfoCollector(tmp_path)], "h", "c", 0.1, batch_reads=flag)
                      for flag in (True, False))
    _same_frames(batched, alone, range(2))
    assert len(batched._batched) == 1
    (tmp_path / "meminfo").write_text("MemTotal: 100 kB\nMemFree: 5x0 kB\nDirty: 8 kB\n")
    _same_frames(batched, alone, range(2, 4))
    (tmp_path / "meminfo").write_text("MemTotal: 100 kB\nMemFree: 40 kB\nDirty: 9 kB\nShmem: 3 kB\n")
    _same_frames(batched, alone, range(4, 7))
    assert "mem.Shmem" in {c.name for c in batched.catalog.channels} and len(batched._batched) == 1


def test_a_source_not_due_holds_its_values_and_the_batch_counts_its_reads(tmp_path):
    (tmp_path / "meminfo").write_text("MemTotal: 100 kB\n")
    registry = CollectorRegistry([MemInfoCollector(tmp_path)], "h", "c", 0.1, source_intervals={"/proc/meminfo": 0.2})
    registry.sample(0)
    (tmp_path / "meminfo").write_text("MemTotal: 200 kB\n")
    assert registry.sample(1)[0].tolist() == [100 * 1024]
    assert registry.sample(2)[0].tolist() == [200 * 1024]
    reads, seconds = registry.read_costs()["/proc/meminfo"]
    assert reads == 2 and seconds > 0


def test_a_batched_file_read_over_its_budget_three_times_is_read_half_as_often(tmp_path):
    (tmp_path / "meminfo").write_text("MemTotal: 100 kB\n")
    registry = CollectorRegistry([MemInfoCollector(tmp_path)], "h", "c", 0.1)
    registry.sample(0)
    source = registry.sources[0]
    registry._batch.schedule(source.batch_index, 1, 0)  # a budget of 0 ns: every read overruns
    for tick in range(1, 4):
        registry.sample(tick)
    assert source.every_ticks == 2 and source.slowdowns == 1


def _entry(batch, fd, text: bytes, wanted, slots, adds=None, offset=0, every=1):
    buffer = bytearray(len(text) + 1)
    buffer[:len(text)] = text
    out = np.zeros(max(slots) + 1)
    _, tokens, label_hash, _ = tokenscan.scan(-1, buffer, len(text), np.asarray(wanted, np.int32),
                                              np.asarray(slots, np.int32), out, None, np.asarray([0], np.int32), 10)
    batch.put(len(batch), fd, 4096, np.asarray(wanted, np.int32), np.asarray(slots, np.int32), None,
              np.asarray([0], np.int32), 10, tokens, label_hash, offset, every, 10**9,
              None if adds is None else np.asarray(adds, np.uint8))


def test_the_batch_reports_an_unreadable_file_and_keeps_its_bytes_for_the_fallback(tmp_path):
    path = tmp_path / "f"
    path.write_text("a 1 2\n")
    with open(path) as handle:
        batch = tokenscan.ScanBatch()
        _entry(batch, handle.fileno(), b"a 1 2\n", [1, 2], [0, 0], adds=[1, 1], offset=1)
        frame = np.zeros(3)
        assert batch.read(0, frame) is None and frame.tolist() == [0.0, 3.0, 0.0]
        path.write_text("b 1 2\n")
        assert batch.read(1, frame) == ([0], [])
        assert batch.text(0) == b"b 1 2\n"
    with pytest.raises(IndexError):
        batch.read(2, np.zeros(1))
    with pytest.raises(ValueError, match="same length"):
        batch.put(1, 0, 10, np.zeros(2, np.int32), np.zeros(1, np.int32), None, np.zeros(0, np.int32), 10, 0, 0, 0,
                  1, 0)


MS = 1_000_000


def _read_ticks(batch, start_ns, last_tick, end_tick, first_row, interval_ns=20 * MS):
    capacity = max(1, end_tick - last_tick - 1)
    rows = np.empty((capacity, len(first_row)))
    rows[0] = first_row
    ticks, walls, lags = (np.zeros(capacity, np.int64) for _ in range(3))
    filled, trouble, interrupted = batch.read_ticks(start_ns, interval_ns, last_tick, end_tick, rows, ticks, walls,
                                                    lags)
    return rows[:filled], ticks[:filled], walls[:filled], lags[:filled], trouble, interrupted


def test_the_compiled_loop_reads_each_due_tick_into_its_own_row_and_holds_what_is_not_due(tmp_path):
    every_tick, every_other = tmp_path / "a", tmp_path / "b"
    every_tick.write_text("a 1\n")
    every_other.write_text("b 2\n")
    with open(every_tick) as first, open(every_other) as second:
        batch = tokenscan.ScanBatch()
        _entry(batch, first.fileno(), b"a 1\n", [1], [0], offset=0, every=1)
        _entry(batch, second.fileno(), b"b 2\n", [1], [0], offset=1, every=2)
        start = time.monotonic_ns()
        rows, ticks, walls, lags, trouble, interrupted = _read_ticks(batch, start, 0, 5, [-1.0, -1.0])
    assert ticks.tolist() == [1, 2, 3, 4] and trouble is None and not interrupted
    assert rows.tolist() == [[1.0, -1.0], [1.0, 2.0], [1.0, 2.0], [1.0, 2.0]]
    assert time.monotonic_ns() >= start + 4 * 20 * MS, "the loop returned before its last tick was due"
    assert (lags >= 0).all() and np.diff(walls).min() > 10 * MS
    assert batch.cost(0)[0] == 4 and batch.cost(1)[0] == 2


def test_a_late_loop_skips_the_ticks_it_missed_and_stops_after_a_tick_it_cannot_vouch_for(tmp_path):
    path = tmp_path / "f"
    path.write_text("a 1\n")
    with open(path) as handle:
        batch = tokenscan.ScanBatch()
        _entry(batch, handle.fileno(), b"a 1\n", [1], [0])
        long_ago = time.monotonic_ns() - 10 * 20 * MS
        _, ticks, _, lags, trouble, _ = _read_ticks(batch, long_ago, -1, 13, [0.0])
        assert ticks[0] >= 10 and lags[0] >= 0 and ticks.tolist() == list(range(ticks[0], 13))
        path.write_text("b 1\n")
        rows, ticks, _, _, trouble, _ = _read_ticks(batch, time.monotonic_ns(), 0, 5, [0.0])
    assert ticks.tolist() == [1] and trouble == ([0], [])
    with pytest.raises(ValueError, match="same number"):
        batch.read_ticks(0, 20 * MS, 0, 5, np.zeros((2, 1)), np.zeros(2, np.int64), np.zeros(1, np.int64),
                         np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="interval_ns"):
        batch.read_ticks(0, 0, 0, 5, np.zeros((1, 1)), *(np.zeros(1, np.int64) for _ in range(3)))
    with pytest.raises(IndexError):
        batch.read_ticks(0, 20 * MS, 0, 5, np.zeros((2, 0)), *(np.zeros(2, np.int64) for _ in range(3)))


@pytest.mark.parametrize("root", ROOTS)
def test_ticks_read_by_the_compiled_loop_equal_the_collectors_own_reads(root, tmp_path):
    procfs = tmp_path / root
    shutil.copytree(FIXTURES / root, procfs)
    batched, alone = _registries(procfs)
    _same_frames(batched, alone, [0])
    sampled = batched.sample_ticks(time.monotonic_ns(), 5 * MS, 0, 6)
    assert [tick.tick for tick in sampled] == [1, 2, 3, 4, 5]
    for tick in sampled:
        expected, changed = alone.sample(tick.tick)
        assert not changed and not tick.catalog_changed and tick.catalog is batched.catalog
        np.testing.assert_array_equal(tick.values, expected)


def test_a_channel_list_changed_within_a_loop_is_announced_at_its_tick_and_not_before(tmp_path):
    (tmp_path / "meminfo").write_text("MemTotal: 100 kB\n")
    (tmp_path / "vmstat").write_text("nr_free_pages 7\n")
    registry = CollectorRegistry([VmStatCollector(tmp_path), MemInfoCollector(tmp_path)], "h", "c", 0.01,
                                 source_intervals={"/proc/meminfo": 0.02, "/proc/vmstat": 0.01})
    registry.sample(0)
    before = registry.catalog
    (tmp_path / "meminfo").write_text("MemTotal: 100 kB\nShmem: 3 kB\n")
    sampled = registry.sample_ticks(time.monotonic_ns(), 10 * MS, 0, 10)
    assert [tick.tick for tick in sampled] == [1, 2], "the loop went on past the tick whose file changed"
    assert sampled[0].catalog is before and not sampled[0].catalog_changed and len(sampled[0].values) == 2
    assert sampled[1].catalog_changed and sampled[1].catalog.version != before.version
    assert dict(zip((c.name for c in sampled[1].catalog.channels), sampled[1].values.tolist())) == {
        "vm.nr_free_pages": 7.0, "mem.MemTotal": 100 * 1024, "mem.Shmem": 3 * 1024}


class _ClockCollector(Collector):
    """Reports when it was read (monotonic seconds), as one channel."""

    def __init__(self, source: str, explains_load: bool):
        super().__init__()
        self.source, self.explains_load = source, explains_load

    def collect(self) -> dict[str, float]:
        out: dict[str, float] = {}
        self._put(out, f"{self.source}.read_at", "", time.monotonic(), "cpu", "gauge", "s")
        return out


def test_a_source_that_explains_load_is_read_after_the_loop_and_stands_for_each_of_its_ticks(tmp_path):
    (tmp_path / "meminfo").write_text("MemTotal: 100 kB\n")
    registry = CollectorRegistry([MemInfoCollector(tmp_path), _ClockCollector("load", False),
                                  _ClockCollector("commands", True)], "h", "c", 0.01)
    registry.sample(0)
    called = time.monotonic()
    loop_starts = called + 0.2  # every tick of the loop lies after this
    sampled = registry.sample_ticks(round(loop_starts * 1e9), 5 * MS, 0, 4)
    assert [tick.tick for tick in sampled] == [1, 2, 3]
    memory, load, commands = (registry.catalog.names.index(name)
                              for name in ("mem.MemTotal", "load.read_at", "commands.read_at"))
    read_before = {tick.values[load] for tick in sampled}
    read_after = {tick.values[commands] for tick in sampled}
    assert len(read_before) == len(read_after) == 1, "a source read once did not hold through the loop"
    assert called <= read_before.pop() < loop_starts < loop_starts + 0.015 <= read_after.pop()
    assert all(tick.values[memory] == 100 * 1024 for tick in sampled)
    assert registry.sample(4)[0][memory] == 100 * 1024
