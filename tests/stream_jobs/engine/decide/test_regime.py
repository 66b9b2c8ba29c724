"""Workload changes: one notice when the activity level holds its other side, findings held while the host settles."""

import pytest

from stream_jobs.engine.decide.regime import RegimeDetector, Settling

SECOND = 1_000_000_000


def observe(detector, levels, first_window=0):
    """(window, change) for each level of 1 s windows, window w ending at w s."""
    return [(w, detector.observe("h", w, w * SECOND, level)) for w, level in enumerate(levels, first_window)]


def test_regime_detector_reports_each_change_once_and_ignores_blips():
    detector = RegimeDetector(hold_s=3.0)
    levels = [2.0] * 6 + [90.0] * 2 + [2.0] * 3 + [90.0] * 8 + [12.0] * 3 + [1.0] * 6
    assert [r for r in observe(detector, levels) if r[1]] == [(14, "workload started"), (25, "workload stopped")]
    assert detector.current("h") == "idle" and detector.current("other") is None


def test_regime_detector_needs_contiguous_windows():
    detector = RegimeDetector(hold_s=2.0)
    observe(detector, [0.0] * 5)
    assert [detector.observe("h", w, w * SECOND, 50.0) for w in (10, 12, 14)] == [None, None, None]
    assert [detector.observe("h", w, w * SECOND, 50.0) for w in (15, 16)] == [None, "workload started"]


def test_the_hold_is_seconds_at_any_stride():
    for stride in (0.5, 1.0, 2.0):
        detector = RegimeDetector(hold_s=10.0)
        changes = [detector.observe("h", w, round(w * stride * SECOND), 2.0 if w * stride < 20 else 90.0)
                   for w in range(round(60 / stride))]
        observe(detector, [])
        window = next(w for w, change in enumerate(changes) if change)
        assert 30.0 <= window * stride <= 30.0 + stride, stride


def test_a_notice_holds_the_hosts_findings_for_settle_s():
    settling = Settling(settle_s=4.0)
    notice = settling.regime_change("h1", 100, 97 * SECOND, 100 * SECOND, "workload stopped")
    assert (notice.alert_id, notice.state, notice.kind) == ("h1:100:regime", "closed", "regime")
    assert notice.summary == "workload stopped on h1 at window 100"
    assert settling.settling("h1", 104 * SECOND) and not settling.settling("h1", 105 * SECOND)
    assert not settling.settling("h2", 101 * SECOND)


def test_invalid_regime_settings_are_rejected():
    with pytest.raises(ValueError):
        RegimeDetector(idle_below=30.0, busy_above=20.0)
