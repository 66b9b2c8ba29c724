import pytest
from hypothesis import given, strategies as st

from stream_jobs.offline.agreement import (compare_runs, hit_rate_by_count, hit_rate_by_length,
                                           intervals_from_windows, iou, merge_intervals, read_windows)
from stream_jobs.offline.output import write_windows

T0_NS = 1_700_000_000_000_000_000
S = 1_000_000_000


def test_merging_joins_overlapping_and_touching_intervals():
    assert merge_intervals([(6, 8), (0, 3), (1, 2), (3, 4), (10, 10)]) == [(0, 4), (6, 8)]
    assert merge_intervals([]) == []


def test_an_interval_that_ends_before_it_starts_is_rejected():
    with pytest.raises(ValueError, match=r"interval \(5, 4\) ends before it starts"):
        merge_intervals([(5, 4)])


def test_iou_is_shared_length_over_union_length():
    # A covers [0,4) ∪ [6,10) = 8; B covers [2,8) = 6; shared [2,4) ∪ [6,8) = 4; union 8 + 6 − 4 = 10.
    a, b = [(0, 4), (6, 10)], [(2, 8)]
    assert iou(a, b) == pytest.approx(0.4)
    assert hit_rate_by_count(a, b) == 1.0
    assert hit_rate_by_length(a, b) == pytest.approx(4 / 8)
    assert hit_rate_by_count(b, a) == 1.0
    assert hit_rate_by_length(b, a) == pytest.approx(4 / 6)


def test_iou_merges_each_side_before_measuring():
    # Windows of 3 s every 1 s overlap; merged they cover [0,5), not 9 s.
    assert iou([(0, 3), (1, 4), (2, 5)], [(0, 5)]) == 1.0


def test_hit_rate_by_count_counts_segments_not_length():
    a = [(0.0, 1.0), (2.0, 3.0), (4.0, 5.0), (6.0, 60.0)]
    b = [(0.5, 2.5)]
    assert hit_rate_by_count(a, b) == 0.5
    assert hit_rate_by_length(a, b) == pytest.approx(1.0 / 57.0)
    assert hit_rate_by_count(b, a) == 1.0


def test_touching_segments_do_not_hit():
    assert hit_rate_by_count([(0, 1)], [(1, 2)]) == 0.0
    assert iou([(0, 1)], [(1, 2)]) == 0.0


def test_empty_sets():
    assert iou([], []) == 1.0 and hit_rate_by_count([], []) == 1.0 and hit_rate_by_length([], []) == 1.0
    assert iou([(0, 1)], []) == 0.0 and iou([], [(0, 1)]) == 0.0
    assert hit_rate_by_count([(0, 1)], []) == 0.0 and hit_rate_by_count([], [(0, 1)]) == 0.0
    assert hit_rate_by_length([(0, 1)], []) == 0.0 and hit_rate_by_length([], [(0, 1)]) == 0.0


def test_integer_nanoseconds_are_measured_exactly():
    a = [(T0_NS, T0_NS + 3 * S)]
    b = [(T0_NS + S, T0_NS + 4 * S)]
    assert iou(a, b) == 0.5 and hit_rate_by_length(a, b) == pytest.approx(2 / 3)


intervals = st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 200)).map(lambda p: (p[0], p[0] + p[1])),
                     max_size=12)


@given(intervals, intervals)
def test_iou_is_symmetric_and_bounded(a, b):
    assert iou(a, b) == iou(b, a)
    assert 0.0 <= iou(a, b) <= 1.0


@given(intervals, intervals)
def test_hit_rates_are_bounded_and_length_never_beats_iou(a, b):
    for rate in (hit_rate_by_count(a, b), hit_rate_by_length(a, b), hit_rate_by_count(b, a)):
        assert 0.0 <= rate <= 1.0
    assert hit_rate_by_length(a, b) >= iou(a, b) - 1e-12


@given(intervals)
def test_a_set_agrees_with_itself(a):
    assert iou(a, a) == 1.0 and hit_rate_by_count(a, a) == 1.0 and hit_rate_by_length(a, a) == 1.0


@given(intervals)
def test_merging_is_idempotent_and_keeps_the_length(a):
    merged = merge_intervals(a)
    assert merge_intervals(merged) == merged
    assert all(end < next_start for (_, end), (next_start, _) in zip(merged, merged[1:]))
    covered = {t for start, end in a for t in range(start, end)}
    assert sum(end - start for start, end in merged) == len(covered)


def windows(host, flags, stride_s=1, window_s=3):
    return [{"host": host, "window_start": T0_NS + i * stride_s * S,
             "window_end": T0_NS + (i * stride_s + window_s) * S, "score": 1.0, "flagged": flagged,
             "detectors": ["zscore"] if flagged else [], "subsystem": "", "claim": "", "ranked_metrics": []}
            for i, flagged in enumerate(flags)]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_flagged_windows_become_merged_intervals_per_host(tmp_path, suffix):
    path = tmp_path / f"run{suffix}"
    write_windows(path, windows("a", [0, 1, 1, 0, 0, 0, 1]) + windows("b", [0, 0]))
    assert intervals_from_windows(read_windows(path)) == {
        "a": [(T0_NS + S, T0_NS + 5 * S), (T0_NS + 6 * S, T0_NS + 9 * S)], "b": []}


def test_compare_runs_reports_hosts_and_pooled_agreement(tmp_path):
    write_windows(tmp_path / "a.csv", windows("h1", [1, 0, 0, 0, 0, 0]) + windows("h2", [0, 0, 0])
                  + windows("h3", [1]))
    write_windows(tmp_path / "b.jsonl", windows("h1", [0, 1, 0, 0, 0, 0]) + windows("h2", [0, 0, 0])
                  + windows("h4", [0]))
    report = compare_runs(tmp_path / "a.csv", tmp_path / "b.jsonl")
    h1 = report["hosts"]["h1"]
    # A: [0,3) s, B: [1,4) s → shared 2 s, union 4 s.
    assert h1["iou"] == 0.5 and h1["seconds_a"] == 3.0 and h1["seconds_both"] == 2.0
    assert h1["hit_by_count_a_to_b"] == 1.0 and h1["hit_by_count_b_to_a"] == 1.0
    assert h1["hit_by_length_a_to_b"] == pytest.approx(2 / 3) and h1["hit_by_length_b_to_a"] == pytest.approx(2 / 3)
    assert report["hosts"]["h2"]["iou"] == 1.0 and report["hosts"]["h4"]["iou"] == 1.0
    assert report["hosts"]["h3"]["iou"] == 0.0 and report["hosts"]["h3"]["hit_by_count_a_to_b"] == 0.0
    overall = report["overall"]
    # Pooled: A has 3 s on h1 and 3 s on h3; B has 3 s on h1; shared 2 s; union 7 s.
    assert overall["iou"] == pytest.approx(2 / 7)
    assert overall["hit_by_count_a_to_b"] == 0.5 and overall["hit_by_count_b_to_a"] == 1.0
    assert overall["hit_by_length_a_to_b"] == pytest.approx(2 / 6)
    assert overall["segments_a"] == 2 and overall["segments_b"] == 1
    assert report["hosts_only_in_a"] == ["h3"] and report["hosts_only_in_b"] == ["h4"]


def test_an_unreadable_flag_names_the_row():
    with pytest.raises(ValueError, match="window row 1: flagged is 'maybe'"):
        intervals_from_windows([{"host": "h", "window_start": "2024-01-01T00:00:00.000Z",
                                 "window_end": "2024-01-01T00:00:03.000Z", "flagged": "maybe"}])


def test_a_row_without_window_times_is_named():
    with pytest.raises(ValueError, match="window row 1 lacks window_end"):
        intervals_from_windows([{"host": "h", "window_start": "2024-01-01T00:00:00.000Z", "flagged": "1"}])
