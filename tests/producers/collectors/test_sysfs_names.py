"""Name helpers of the sysfs collectors: sanitised labels, unique names, numbered directories, label files."""

import doctest

from hypothesis import given, strategies as st

from producers.collectors import msr, sysfs_names
from producers.collectors.sysfs_names import (numbered, numbered_directories, qualified_where_repeated, read_label,
                                              sanitised)


def test_docstring_examples():
    for module in (sysfs_names, msr):
        assert doctest.testmod(module).failed == 0


@given(st.text(max_size=40))
def test_sanitised_labels_use_only_lower_case_digits_and_underscores(label):
    name = sanitised(label)
    assert set(name) <= set("abcdefghijklmnopqrstuvwxyz0123456789_")
    assert not name.startswith("_") and not name.endswith("_")


@given(st.lists(st.sampled_from(["a", "b", "a_h0", "a_h1", "b_h0_2"]), max_size=8))
def test_qualified_names_are_always_unique(names):
    qualified = qualified_where_repeated(names, [f"h{index % 2}" for index in range(len(names))])
    assert len(set(qualified)) == len(qualified) == len(names)


def test_numbered_directories_come_in_number_order_without_lookalikes(tmp_path):
    for name in ("cpu10", "cpu2", "cpufreq", "cpuidle", "cpu0", "online"):
        (tmp_path / name).mkdir()
    assert [path.name for path in numbered_directories(tmp_path, "cpu")] == ["cpu0", "cpu2", "cpu10"]
    assert numbered_directories(tmp_path / "absent", "cpu") == []
    assert (numbered("node1", "node"), numbered("node", "node"), numbered("12", "")) == (1, -1, 12)
    assert (numbered("xcpu1", "cpu"), numbered("cpu\u00b2", "cpu")) == (-1, -1)


def test_read_label_takes_the_first_line_or_none(tmp_path):
    (tmp_path / "label").write_bytes(b"Package id 0\nsecond\n")
    (tmp_path / "empty").write_bytes(b"\n")
    assert read_label(tmp_path / "label") == "Package id 0"
    assert read_label(tmp_path / "empty") is None and read_label(tmp_path / "absent") is None
