"""TokenLayout: values picked by token position while the labels stay where they were, scaled, in base 16, and
'inf' read as NaN."""

import math

import pytest

from producers.fast_read.token_layout import TokenLayout, finite_or_nan

MEMINFO = b"MemTotal: 100 kB\nDirty: 7 kB\n"


def meminfo_layout() -> TokenLayout:
    """MEMINFO's layout: values at tokens 1 and 4, labels at 0 and 3, kB scaled to bytes."""
    return TokenLayout(("mem.MemTotal", "mem.Dirty"), 6, [1, 4], [0, 3], (b"MemTotal:", b"Dirty:"),
                       [1024.0, 1024.0], 10)


def test_values_are_picked_by_position_and_scaled():
    tokens = MEMINFO.split()
    layout = meminfo_layout()
    assert layout.matches(tokens)
    assert layout.values(tokens) == [102400.0, 7168.0]


def test_a_changed_label_or_token_count_no_longer_matches():
    layout = meminfo_layout()
    assert not layout.matches(b"MemFree: 100 kB\nDirty: 7 kB\n".split())
    assert not layout.matches((MEMINFO + b"Extra: 1 kB\n").split())
    assert layout.matches(b"MemTotal: 5 kB\nDirty: 6 kB\n".split())


def test_a_value_that_is_not_a_number_raises_value_error():
    with pytest.raises(ValueError):
        meminfo_layout().values(b"MemTotal: 1x0 kB\nDirty: 7 kB\n".split())


def test_hexadecimal_values_and_layouts_of_one_or_no_value():
    softnet = TokenLayout(("net.softnet_processed.cpu0",), 3, [0], [], (), None, 16)
    tokens = [b"0000ff", b"00000000", b"00000001"]
    assert softnet.matches(tokens) and softnet.values(tokens) == [255.0]
    empty = TokenLayout((), 2, [], [], (), None, 10)
    assert empty.matches([b"a", b"b"]) and empty.values([b"a", b"b"]) == []


def test_infinity_in_a_file_reads_as_nan():
    values = TokenLayout(("a", "b"), 2, [0, 1], [], (), None, 10).values([b"inf", b"3"])
    assert math.isnan(values[0]) and values[1] == 3.0
    assert math.isnan(finite_or_nan([1.0, -math.inf])[1])
    assert finite_or_nan([1.0, 2.0]) == [1.0, 2.0]
