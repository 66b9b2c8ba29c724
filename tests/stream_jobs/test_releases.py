"""Records are released in arrival order, only once their host no longer needs them, and never past the bound."""

from stream_jobs.releases import ReleaseTracker

S = 10**9


def test_frames_are_released_once_older_than_what_the_host_still_needs():
    tracker = ReleaseTracker()
    for second in range(5):
        tracker.hold("h", second * S, f"h{second}")
    tracker.advance("h", 3 * S)
    assert tracker.take_ready() == ["h0", "h1", "h2"] and tracker.held() == 2
    tracker.advance("h", None)
    assert tracker.take_ready() == ["h3", "h4"] and tracker.held() == 0


def test_records_put_back_after_a_failed_flush_come_first_next_time():
    tracker = ReleaseTracker()
    tracker.done("catalog-1")
    failed = tracker.take_ready()
    tracker.done("catalog-2")
    tracker.put_back(failed)
    assert tracker.take_ready() == ["catalog-1", "catalog-2"]


def test_a_host_holds_at_most_max_held_s_of_frames():
    tracker = ReleaseTracker(max_held_s=10)
    for second in range(30):
        tracker.hold("h", second * S, second)
    tracker.advance("h", 0)
    assert tracker.take_ready() == list(range(19))


def test_forgotten_hosts_release_nothing():
    tracker = ReleaseTracker()
    tracker.hold("h", 0, "h0")
    tracker.forget("h")
    tracker.advance("h", None)
    assert tracker.take_ready() == [] and tracker.held() == 0
