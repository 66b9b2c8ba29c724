"""Severity on one scale: bounded, monotone in the distance, worded the same everywhere."""

from stream_jobs.engine.decide.incidents import IncidentTracker
from stream_jobs.engine.severity import severity_scale, severity_word
from tests.stream_jobs.engine.decide.test_incidents import feed


def test_severity_is_bounded_and_worded_the_same_for_any_distance():
    tracker = IncidentTracker()
    events = feed(tracker, "h1", [True] * 3, severities=[1.2e6, 2e6, 3e6])
    assert events[0].severity == 10.0 and "critical" in events[0].summary and "10.0 of 10" in events[0].summary
    scaled = [severity_scale(d) for d in (1.0, 3.0, 10.0, 100.0, 1e6)]
    assert scaled == sorted(scaled) and all(1.0 <= s <= 10.0 for s in scaled)
    assert [severity_word(s) for s in scaled] == ["minor", "minor", "major", "critical", "critical"]
