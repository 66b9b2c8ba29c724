"""The compiled token scanner reads every kernel file exactly as the Python parse does, and hands anything it cannot
vouch for back to it."""

import math
import shutil

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from producers.collectors.diskstats import DiskStatsCollector
from producers.collectors.interrupts import InterruptsCollector, SoftIrqsCollector
from producers.collectors.meminfo import MemInfoCollector
from producers.collectors.netdev import NetDevCollector
from producers.collectors.procstat import ProcStatCollector
from producers.collectors.snmp import NetstatCollector, SnmpCollector
from producers.collectors.sockstat import SockStatCollector
from producers.collectors.softnet import SoftnetCollector
from producers.collectors.vmstat import VmStatCollector
from producers.fast_read import scanned_layout
from tests.conftest import FIXTURES

tokenscan = scanned_layout._tokenscan

TEXT_SOURCES = (ProcStatCollector, InterruptsCollector, SoftIrqsCollector, MemInfoCollector, VmStatCollector,
                NetDevCollector, SnmpCollector, NetstatCollector, SockStatCollector, SoftnetCollector,
                DiskStatsCollector)
ROOTS = ("proc", "proc-large", "proc-old-kernel")


def test_the_scanner_is_built_by_the_install():
    assert tokenscan is not None, "producers.fast_read._tokenscan was not compiled: `pip install .` builds it"


def _python_only(collector, monkeypatch):
    monkeypatch.setattr(scanned_layout, "_tokenscan", None)
    try:
        return collector.read()
    finally:
        monkeypatch.undo()


def _roots_with(collector_class):
    return [root for root in ROOTS if (FIXTURES / root / collector_class.relative).exists()]


@pytest.mark.parametrize("collector_class", TEXT_SOURCES)
def test_scanned_reads_equal_the_python_parse_on_every_captured_file(collector_class, tmp_path, monkeypatch):
    for root in _roots_with(collector_class):
        procfs = tmp_path / root
        shutil.copytree(FIXTURES / root, procfs)
        scanned, plain = collector_class(procfs), collector_class(procfs)
        scanned.read()
        assert scanned._scanned is not None or collector_class is SockStatCollector
        first = scanned.read()
        expected = _python_only(plain, monkeypatch)
        assert first.names == expected.names
        np.testing.assert_array_equal(np.asarray(first.values, dtype=float), np.asarray(expected.values, dtype=float))


def test_a_changed_value_is_read_by_the_scanner_without_a_new_layout(tmp_path):
    (tmp_path / "net").mkdir()
    path = tmp_path / "net" / "softnet_stat"
    line = "0000{0:04x} 00000000 00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n"
    path.write_text(line.format(16) + line.format(17))
    collector = SoftnetCollector(tmp_path)
    first = collector.read()
    layout = collector._layout
    path.write_text(line.format(255) + line.format(4096))
    second = collector.read()
    assert collector._layout is layout and second.names is first.names
    values = dict(zip(second.names, np.asarray(second.values).tolist()))
    assert [v for k, v in values.items() if k.startswith("net.softnet_processed")] == [255.0, 4096.0]


def _meminfo_scanned(procfs, text: str) -> MemInfoCollector:
    """A meminfo collector whose layout is learnt and handed to the scanner."""
    (procfs / "meminfo").write_text(text)
    collector = MemInfoCollector(procfs)
    collector.read()
    collector.read()
    assert collector._scanned is not None
    return collector


def test_a_value_turning_malformed_falls_back_to_the_python_parse_for_that_line_alone(tmp_path):
    collector = _meminfo_scanned(tmp_path, "MemTotal: 100 kB\nMemFree: 50 kB\nDirty: 7 kB\n")
    (tmp_path / "meminfo").write_text("MemTotal: 100 kB\nMemFree: 5x0 kB\nDirty: 8 kB\n")
    values = collector.collect()
    assert values["mem.MemTotal"] == 100 * 1024 and values["mem.Dirty"] == 8 * 1024
    assert "mem.MemFree" not in values


def test_a_file_that_outgrows_the_scanner_buffer_is_read_whole(tmp_path):
    collector = _meminfo_scanned(tmp_path, "MemTotal: 100 kB\n")
    (tmp_path / "meminfo").write_text("MemTotal: 100 kB\n" + "".join(f"Extra{i}: {i} kB\n" for i in range(3000)))
    values = collector.collect()
    assert len(values) == 3001 and values["mem.Extra2999"] == 2999 * 1024


def test_a_new_label_in_the_same_token_count_makes_a_new_layout(tmp_path):
    collector = _meminfo_scanned(tmp_path, "MemTotal: 100 kB\nMemFree: 50 kB\n")
    (tmp_path / "meminfo").write_text("MemTotal: 100 kB\nMemAvailable: 60 kB\n")
    assert set(collector.collect()) == {"mem.MemTotal", "mem.MemAvailable"}


def _scan(text: bytes, wanted: list[int], base_: int = 10):
    out = np.full(len(wanted), np.nan)
    buffer = bytearray(text) + bytearray(1)
    length, tokens, _, ok = tokenscan.scan(-1, buffer, len(text), np.asarray(wanted, np.int32),
                                           np.arange(len(wanted), dtype=np.int32), out, None,
                                           np.zeros(0, np.int32), base_)
    return length, tokens, ok, out


NUMBER = st.one_of(st.integers(-(2**63), 2**64 - 1).map(str),
                   st.floats(allow_nan=False, allow_infinity=False).map(repr),
                   st.text("0123456789.-+eE", min_size=1, max_size=24))


@settings(max_examples=600, deadline=None)
@given(st.lists(NUMBER, min_size=1, max_size=20), st.sampled_from([" ", "\t", "\n", "  \n "]))
def test_what_the_scanner_accepts_equals_python_float(tokens, separator):
    """A refusal is always safe (the Python parse takes over); an acceptance must be exact."""
    text = separator.join(tokens).encode()
    _, count, ok, out = _scan(text, list(range(len(tokens))))
    assert count == len(text.split())
    if ok:
        np.testing.assert_array_equal(out, [float(t) for t in text.split()])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 10**19 - 1).map(str), st.decimals(0, 10**6, places=2).map(str)),
                min_size=1, max_size=20))
def test_the_kernels_number_forms_are_always_accepted(tokens):
    _, _, ok, out = _scan(" ".join(tokens).encode(), list(range(len(tokens))))
    assert ok
    np.testing.assert_array_equal(out, [float(t) for t in tokens])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=12))
def test_hexadecimal_counters_equal_python_int(numbers):
    text = " ".join(f"{n:08x}" for n in numbers).encode()
    _, _, ok, out = _scan(text, list(range(len(numbers))), 16)
    assert ok
    np.testing.assert_array_equal(out, [float(n) for n in numbers])


def test_missing_wanted_tokens_and_bad_arguments_are_refused():
    assert _scan(b"1 2", [0, 5])[2] == 0
    with pytest.raises(IndexError):
        tokenscan.scan(-1, bytearray(b"1 2 "), 3, np.array([0], np.int32), np.array([3], np.int32),
                       np.zeros(1), None, np.zeros(0, np.int32), 10)
    with pytest.raises(ValueError):
        tokenscan.scan(-1, bytearray(b"1 2 "), 99, np.array([0], np.int32), np.array([0], np.int32),
                       np.zeros(1), None, np.zeros(0, np.int32), 10)
