import pytest
from hypothesis import given, settings, strategies as st

from stream_jobs.engine.attribution import Contribution
from stream_jobs.engine.decide.incidents import AlertEvent, IncidentTracker
from stream_jobs.engine.decide.settings import DecisionSettings
from stream_jobs.engine.severity import severity_scale

SECOND = 1_000_000_000
BUSY = [("cpu.busy.cpu3", "std", 12.0)]


def tracker_of(close_after_s=3.0, reopen_within_s=None, **settings) -> IncidentTracker:
    """A tracker of 1 s windows (window w ends at w s); without `reopen_within_s` a closed incident never reopens."""
    reopen = close_after_s if reopen_within_s is None else reopen_within_s
    return IncidentTracker(DecisionSettings(close_after_s=close_after_s, reopen_within_s=reopen, **settings))


def feed(tracker, host, flags, severities=None, subsystems=None, evidence=BUSY, first_window=100, hold_s=0.0):
    """Feed one window per flag, window w from w − 3 s to w s; returns every event in order."""
    events = []
    for offset, flagged in enumerate(flags):
        window = first_window + offset
        severity = severities[offset] if severities else 5.0
        subsystem = subsystems[offset] if subsystems else "cpu"
        events += tracker.update(host, window, (window - 3) * SECOND, window * SECOND, flagged,
                                 severity if flagged else 0.0, subsystem if flagged else "",
                                 evidence if flagged else [], hold_s)
    return events


def test_a_run_of_anomalous_windows_opens_once_and_closes_after_quiet_windows():
    events = feed(tracker_of(), "h1", [False, True, True, True, False, False, False, False])
    assert [e.state for e in events] == ["open", "closed"]
    opened, closed = events
    assert opened.alert_id == closed.alert_id == "h1:101"
    assert opened.start_ns == 98 * SECOND and closed.end_ns == 103 * SECOND
    assert closed.subsystem == "cpu" and closed.severity == severity_scale(5.0)
    assert "3 windows" in closed.summary and "cpu.busy.cpu3" in closed.summary


def test_the_close_comes_close_after_s_after_the_last_anomalous_window():
    tracker = tracker_of(close_after_s=3)
    feed(tracker, "h1", [True])
    assert tracker.update("h1", 101, 98 * SECOND, 101 * SECOND, False, 0.0, "", []) == []
    assert tracker.update("h1", 102, 99 * SECOND, 102 * SECOND, False, 0.0, "", []) == []
    assert [e.state for e in tracker.update("h1", 103, 100 * SECOND, 103 * SECOND, False, 0.0, "", [])] == ["closed"]


def test_gaps_shorter_than_close_after_s_keep_one_incident():
    events = feed(tracker_of(close_after_s=3), "h1", [True, False, False, True, False, True] + [False] * 3)
    assert [e.state for e in events] == ["open", "closed"]
    assert "3 windows" in events[-1].summary


def test_a_gap_of_close_after_s_splits_incidents():
    events = feed(tracker_of(close_after_s=2), "h1", [True, False, False, True, False, False])
    assert [(e.alert_id, e.state) for e in events] == [("h1:100", "open"), ("h1:100", "closed"),
                                                       ("h1:103", "open"), ("h1:103", "closed")]


def test_a_symptom_back_soon_after_its_incident_closed_reopens_the_same_incident():
    tracker = tracker_of(close_after_s=2, reopen_within_s=7)
    events = feed(tracker, "h1", [True, False, False, False, True, False])
    assert [(e.alert_id, e.state) for e in events] == [("h1:100", "open"), ("h1:100", "closed"), ("h1:100", "update")]
    assert events[1].end_ns == 100 * SECOND, "the closing is sent close_after_s after the last anomalous window"
    assert "back after a quiet spell" in events[-1].summary and "2 windows" in events[-1].summary
    closing = feed(tracker, "h1", [False] * 7, first_window=106)
    assert [(e.alert_id, e.state) for e in closing] == [("h1:100", "closed")]
    assert closing[0].end_ns == 104 * SECOND, "the incident ends with its last anomalous window"
    late = feed(tracker, "h1", [True], first_window=113)
    assert [(e.alert_id, e.state) for e in late] == [("h1:113", "open")], "back after reopen_within_s: a new one"


def test_another_channel_after_an_incident_closed_opens_its_own():
    tracker = tracker_of(close_after_s=2, reopen_within_s=7)
    feed(tracker, "h1", [True, False, False])
    events = feed(tracker, "h1", [True], evidence=[("cpu.busy.cpu0", "mean", 9.0), *BUSY], first_window=103)
    assert [(e.alert_id, e.state) for e in events] == [("h1:103", "open")], "h1:100 closed at window 102"


def test_a_returning_channel_with_a_new_level_beside_it_is_a_new_fault_but_a_new_spread_is_not():
    """A write's page allocations went quiet; an allocation a minute later moves them again, led by them, and faults
    its own pages in: a new incident. A burst that flickers back dragging a spread along continues the old one."""
    allocations = [("vm.pgalloc_normal", "residual-std", 40.0)]
    tracker = tracker_of(close_after_s=2, reopen_within_s=7)
    feed(tracker, "h1", [True, False, False], evidence=allocations)
    events = feed(tracker, "h1", [True], evidence=[*allocations, ("cgroup.memory_pgfault", "residual", 30.0)],
                  first_window=103)
    assert [(e.alert_id, e.state) for e in events] == [("h1:103", "open")]
    tracker = tracker_of(close_after_s=2, reopen_within_s=7)
    feed(tracker, "h1", [True, False, False], evidence=allocations)
    events = feed(tracker, "h1", [True], evidence=[*allocations, ("vm.pgfree", "std", 30.0)], first_window=103)
    assert [(e.alert_id, e.state) for e in events] == [("h1:100", "update")]


def test_without_time_to_reopen_a_returning_symptom_is_a_new_incident():
    events = feed(tracker_of(close_after_s=2), "h1", [True, False, False, False, True])
    assert [(e.alert_id, e.state) for e in events] == [("h1:100", "open"), ("h1:100", "closed"),
                                                       ("h1:104", "open")]


def test_missing_windows_count_as_quiet():
    tracker = tracker_of(close_after_s=3)
    feed(tracker, "h1", [True])
    events = tracker.update("h1", 110, 107 * SECOND, 110 * SECOND, True, 4.0, "cpu", BUSY)
    assert [(e.alert_id, e.state) for e in events] == [("h1:100", "closed"), ("h1:110", "open")]


def test_a_finding_held_for_hold_s_needs_that_long_of_consecutive_anomalous_windows():
    tracker = tracker_of()
    assert feed(tracker, "h1", [True, False, True], hold_s=1.0) == []
    events = feed(tracker, "h1", [True], first_window=103, hold_s=1.0)
    assert [(e.alert_id, e.state) for e in events] == [("h1:102", "open")]
    assert events[0].start_ns == 99 * SECOND


def test_updates_only_when_severity_escalates_or_the_subsystem_changes():
    tracker = tracker_of(escalation=1.5)
    events = feed(tracker, "h1", [True] * 6, severities=[4.0, 4.5, 5.0, 7.0, 6.0, 7.2],
                  subsystems=["storage", "storage", "storage", "storage", "network", "network"])
    assert [(e.state, e.severity, e.subsystem) for e in events] == [("open", severity_scale(4.0), "storage"),
                                                                     ("update", severity_scale(7.0), "storage")]
    events = feed(tracker, "h1", [True] * 3, severities=[9.0, 9.0, 9.0], subsystems=["network"] * 3,
                  first_window=106)
    assert [(e.state, e.subsystem) for e in events] == [("update", "network")]


def test_cpu_time_that_moves_with_another_subsystem_is_named_after_the_other():
    """Reclaim under memory pressure shows first and strongest as system time: the incident is memory's."""
    tracker = tracker_of()
    events = feed(tracker, "h1", [True] * 4, severities=[9.0, 8.0, 8.0, 8.0],
                  subsystems=["cpu", "memory", "cpu", "cpu"])
    assert [(e.state, e.subsystem) for e in events] == [("open", "cpu"), ("update", "memory")]
    alone = feed(tracker_of(), "h2", [True] * 3, severities=[9.0] * 3, subsystems=["cpu"] * 3)
    assert [(e.state, e.subsystem) for e in alone] == [("open", "cpu")]


def test_no_two_identical_consecutive_events_for_an_alert():
    tracker = tracker_of()
    events = feed(tracker, "h1", [True] * 20, severities=[5.0] * 20)
    assert [e.state for e in events] == ["open"]


def test_close_all_ends_every_open_incident_in_host_order():
    tracker = tracker_of()
    feed(tracker, "b", [True])
    feed(tracker, "a", [True, True])
    assert [i.host for i in tracker.open_incidents()] == ["a", "b"]
    events = tracker.close_all()
    assert [(e.host, e.state) for e in events] == [("a", "closed"), ("b", "closed")]
    assert tracker.close_all() == [] and tracker.open_incidents() == []


def test_ids_are_deterministic_and_replays_give_the_same_events():
    flags = [True, True, False, False, False, True, False, True, True, False, False, False]
    first = feed(tracker_of(), "h9", flags) + []
    second = feed(tracker_of(), "h9", flags)
    assert first == second
    assert {e.alert_id for e in first} == {"h9:100", "h9:105"}


def test_late_and_repeated_windows_are_ignored():
    tracker = tracker_of()
    feed(tracker, "h1", [True, True])
    assert tracker.update("h1", 101, 0, 0, True, 50.0, "gpu", BUSY) == []
    assert tracker.update("h1", 50, 0, 0, False, 0.0, "", []) == []


def test_hosts_are_independent():
    tracker = tracker_of()
    feed(tracker, "h1", [True])
    events = feed(tracker, "h2", [False, False, False, False])
    assert events == [] and [i.host for i in tracker.open_incidents()] == ["h1"]


def test_top_evidence_keeps_the_most_frequent_pairs_and_a_known_signature_gives_a_hint():
    tracker = tracker_of()
    irq = [("irq.total.cpu0", "mean", 9.0)]
    noise = [[(f"disk.sectors_read.sd{c}", "max", 4.0)] for c in "abcdef"]
    events = []
    for offset, extra in enumerate(noise):
        window = 100 + offset
        events += tracker.update("h1", window, 0, window, True, 3.0, "cpu", irq + extra)
    incident = tracker.open_incidents()[0]
    assert incident.windows == 6 and len(incident.evidence) == 5
    assert incident.evidence[0] == ("irq.total.cpu0", "mean", 9.0)
    closed = tracker.close_all()[0]
    assert closed.hint.startswith("enable irqbalance") and "IRQ imbalance" in closed.summary


def test_attribution_contributions_are_accepted_as_evidence():
    tracker = tracker_of()
    contribution = Contribution("cpu.busy.cpu3", "std", 40.0, 10.0, 2.0, 15.0)
    tracker.update("h1", 1, 0, 1, True, 6.0, "cpu", [contribution])
    assert tracker.open_incidents()[0].evidence == (("cpu.busy.cpu3", "std", 15.0),)


def test_invalid_settings_are_rejected():
    with pytest.raises(ValueError, match="close_after_s"):
        DecisionSettings(close_after_s=-1)
    with pytest.raises(ValueError, match="reopen_within_s"):
        DecisionSettings(close_after_s=30, reopen_within_s=10)
    with pytest.raises(ValueError, match="escalation"):
        DecisionSettings(escalation=1.0)
    with pytest.raises(ValueError, match="settle_s"):
        DecisionSettings(settle_s=float("nan"))


windows = st.lists(st.tuples(st.integers(0, 3), st.booleans(), st.floats(0, 100, allow_nan=False),
                             st.sampled_from(["cpu", "gpu", "network"])), max_size=120)


@settings(max_examples=200, deadline=None)
@given(windows, st.integers(0, 2), st.integers(1, 4), st.integers(0, 4))
def test_alert_lifecycles_are_well_formed_and_never_repeat_an_event(steps, hold, close_after, reopen_after):
    tracker = tracker_of(close_after_s=close_after, reopen_within_s=close_after + reopen_after)
    events: list[AlertEvent] = []
    window = 0
    for skip, flagged, severity, subsystem in steps:
        window += 1 + skip
        events += tracker.update("h", window, (window - 3) * SECOND, window * SECOND, flagged, severity, subsystem,
                                 BUSY, hold_s=hold)
    events += tracker.close_all()
    by_alert: dict[str, list[AlertEvent]] = {}
    for event in events:
        by_alert.setdefault(event.alert_id, []).append(event)
    for history in by_alert.values():
        states = [e.state for e in history]
        assert states[0] == "open" and states[-1] == "closed" and "open" not in states[1:]
        assert all(after == "update" for before, after in zip(states, states[1:]) if before == "closed"), states
        assert all(a != b for a, b in zip(history, history[1:]))
        closed_at = [e.end_ns for e in history if e.state == "closed"]
        assert closed_at == sorted(closed_at)


def test_an_incident_named_after_a_subsystem_tells_of_its_channels_before_the_cpu_time_that_moved_with_it():
    tracker = tracker_of()
    cpu = [("cpu.forks", "mean", 240.0), ("cpu.user.all", "mean", 125.0), ("cpu.user.cpu1", "mean", 118.0)]
    disk = ("disk.time_reading_ms.vda", "std", 12.0)
    events = []
    for window in range(100, 104):
        events += tracker.update("h1", window, 0, window, True, 20.0, "storage", cpu, lead=disk)
    assert events[0].subsystem == "storage"
    told = events[-1].summary.split("; ")[1]
    assert told.startswith("disk.time_reading_ms.vda std z=+12.0"), events[-1].summary
    assert tracker.open_incidents()[0].evidence[0] == ("cpu.forks", "mean", 240.0), "what routing holds is unchanged"

