import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from stream_jobs.engine.windows import WindowAssembler

T0 = 1_700_000_000_000_000_000
STEP = 100_000_000  # 100 ms


def feed(assembler, timestamps):
    windows = []
    for t in timestamps:
        windows += assembler.push(int(t), np.array([float(t)]))
    return windows


def test_windows_are_aligned_to_the_stride_and_cover_window_length():
    windows = feed(WindowAssembler(3.0, 1.0, 0.1), [T0 + 50_000_000 + i * STEP for i in range(100)])
    assert windows, "ten seconds of frames must close several windows"
    for window in windows:
        assert window.end_ns % 1_000_000_000 == 0
        assert window.end_ns - window.start_ns == 3_000_000_000
        opening, inside = window.timestamps_ns[0], window.timestamps_ns[1:]
        assert window.start_ns - STEP <= opening < window.start_ns, "a window opens with the frame before it"
        assert inside.min() >= window.start_ns and inside.max() < window.end_ns
        assert len(window.timestamps_ns) == 31
    assert [w.window_id for w in windows] == list(range(windows[0].window_id, windows[0].window_id + len(windows)))


def test_a_counter_read_once_a_second_moves_as_often_in_every_window_whatever_its_phase():
    for phase in range(10):
        timestamps = [T0 + i * STEP for i in range(150)]
        seconds_counter = [float((i + phase) // 10) for i in range(150)]
        assembler, windows = WindowAssembler(3.0, 1.0, 0.1), []
        for t, value in zip(timestamps, seconds_counter):
            windows += assembler.push(t, np.array([value]))
        moves = {int(np.count_nonzero(np.diff(w.values[:, 0]))) for w in windows[1:]}
        assert moves == {3}, f"phase {phase}: windows saw {moves} reads of a once-a-second counter"


def test_window_ids_do_not_depend_on_where_the_stream_starts():
    full = feed(WindowAssembler(), [T0 + i * STEP for i in range(200)])
    later = feed(WindowAssembler(), [T0 + i * STEP for i in range(37, 200)])
    common = {w.window_id for w in later}
    assert common and all(np.array_equal(w.values, next(v for v in later if v.window_id == w.window_id).values)
                          for w in full if w.window_id in common)


def test_late_and_duplicate_frames_are_dropped_and_counted():
    assembler = WindowAssembler()
    feed(assembler, [T0, T0 + STEP, T0 + STEP, T0 + 2 * STEP, T0 + STEP // 2])
    assert assembler.counters.duplicate == 1 and assembler.counters.late == 1 and assembler.counters.frames == 3


def test_a_gap_skips_sparse_windows_instead_of_emitting_them():
    timestamps = [T0 + i * STEP for i in range(50)] + [T0 + 20_000_000_000 + i * STEP for i in range(50)]
    assembler = WindowAssembler()
    windows = feed(assembler, timestamps)
    assert assembler.counters.sparse_windows >= 10
    assert all(np.count_nonzero(w.timestamps_ns >= w.start_ns) >= assembler.min_frames for w in windows)


def test_invalid_settings_are_rejected():
    with pytest.raises(ValueError, match="stride"):
        WindowAssembler(window_s=1.0, stride_s=2.0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=400), max_size=300))
def test_any_arrival_order_never_crashes_and_windows_only_move_forward(offsets):
    assembler = WindowAssembler()
    windows = feed(assembler, [T0 + o * STEP for o in offsets])
    ids = [w.window_id for w in windows]
    assert ids == sorted(set(ids))
    counters = assembler.counters
    assert counters.frames + counters.late + counters.duplicate == len(offsets)


@settings(max_examples=60, deadline=None)
@given(phase=st.integers(0, STEP - 1), stop_after=st.integers(45, 90))
def test_an_assembler_resumed_from_its_oldest_needed_frame_cuts_the_same_windows_and_holds_one_window(phase,
                                                                                                     stop_after):
    timestamps = [T0 + phase + i * STEP for i in range(120)]
    uninterrupted = {w.window_id: w.timestamps_ns.tolist() for w in feed(WindowAssembler(3.0, 1.0, 0.1), timestamps)}
    first = WindowAssembler(3.0, 1.0, 0.1)
    cut = feed(first, timestamps[:stop_after])
    assert len(first._frames) <= 32, "frames the next window no longer spans are not held"
    since = first.needed_since_ns()
    resumed = {w.window_id: w.timestamps_ns.tolist()
               for w in feed(WindowAssembler(3.0, 1.0, 0.1), [t for t in timestamps if t >= since])}
    assert cut[-1].window_id in resumed, "the resumed assembler cuts the last window again"
    assert set(uninterrupted) - {w.window_id for w in cut} <= set(resumed)
    assert all(resumed[window_id] == uninterrupted[window_id] for window_id in resumed)
