"""Records are released in partition order, only once their host no longer needs them, never past the bound; each
partition is processed in offset order from its start, and a record past the expected offset asks for a re-read."""

from stream_jobs.releases import ReadCursors, ReleaseTracker, Verdict

S = 10**9


def hold_frames(tracker: ReleaseTracker, host: str, seconds, partition: str = "p0") -> None:
    for second in seconds:
        tracker.hold(host, second * S, tracker.consumed(partition, f"{host}{second}"))


def test_frames_are_released_once_older_than_what_the_host_still_needs():
    tracker = ReleaseTracker()
    hold_frames(tracker, "h", range(5))
    tracker.advance("h", 3 * S)
    assert tracker.take_ready() == ["h0", "h1", "h2"] and tracker.held() == 2
    tracker.advance("h", None)
    assert tracker.take_ready() == ["h3", "h4"] and tracker.held() == 0


def test_a_host_still_needing_a_frame_holds_back_later_records_of_its_partition():
    tracker = ReleaseTracker()
    a0 = tracker.consumed("p0", "a0")
    tracker.hold("a", 0, a0)
    hold_frames(tracker, "b", range(3))
    catalog = tracker.consumed("p0", "catalog")
    tracker.done(catalog)
    hold_frames(tracker, "c", range(2), partition="p1")
    tracker.advance("b", None)
    tracker.advance("c", None)
    assert tracker.take_ready() == ["c0", "c1"] and tracker.held() == 1, "p0 waits for a0"
    tracker.advance("a", None)
    assert tracker.take_ready() == ["a0", "b0", "b1", "b2", "catalog"]


def test_records_put_back_after_a_failed_flush_come_first_next_time():
    tracker = ReleaseTracker()
    tracker.done(tracker.consumed("catalogs", "catalog-1"))
    failed = tracker.take_ready()
    tracker.done(tracker.consumed("catalogs", "catalog-2"))
    tracker.put_back(failed)
    assert tracker.take_ready() == ["catalog-1", "catalog-2"]


def test_a_host_holds_at_most_max_held_s_of_frames():
    tracker = ReleaseTracker(max_held_s=10)
    for second in range(30):
        tracker.hold("h", second * S, tracker.consumed("p0", second))
    tracker.advance("h", 0)
    assert tracker.take_ready() == list(range(19))


def test_revoked_partitions_release_nothing():
    tracker = ReleaseTracker()
    hold_frames(tracker, "h", range(2))
    tracker.forget_all()
    tracker.advance("h", None)
    assert tracker.take_ready() == [] and tracker.held() == 0


def test_partitions_are_read_in_offset_order_from_their_start():
    cursors = ReadCursors()
    assert cursors.judge("p0", "samples", 5) is Verdict.NOT_POSITIONED
    cursors.start("p0", 5)
    assert cursors.judge("p0", "samples", 4) is Verdict.ALREADY_READ
    assert cursors.judge("p0", "samples", 6) is Verdict.GAP
    assert cursors.judge("p0", "samples", 5) is Verdict.PROCESS
    cursors.processed("p0", 5)
    assert cursors.expected("p0") == 6 and cursors.judge("p0", "samples", 6) is Verdict.PROCESS


def test_a_compacted_topic_may_skip_offsets():
    cursors = ReadCursors(compacted_topics=frozenset({"catalog"}))
    cursors.start("c0", 0)
    assert cursors.judge("c0", "catalog", 7) is Verdict.PROCESS


def test_revocation_unpositions_every_partition_and_starts_a_new_generation():
    cursors = ReadCursors()
    cursors.start("p0", 0)
    cursors.reset()
    assert cursors.generation == 1 and cursors.judge("p0", "samples", 0) is Verdict.NOT_POSITIONED
    cursors.processed("p0", 0)
    assert cursors.expected("p0") is None


def test_a_gap_seeks_once_while_stale_records_arrive_and_again_if_nothing_follows():
    cursors = ReadCursors(reseek_after_s=0.5)
    cursors.start("p0", 10)
    assert cursors.should_seek("p0", now=100.0)
    assert not cursors.should_seek("p0", now=100.2), "the rest of a stale fetch does not seek again"
    assert cursors.stalled(now=100.3) == []
    assert cursors.stalled(now=100.6) == [("p0", 10)]
    assert cursors.stalled(now=100.7) == [], "seeking again resets the clock"
    cursors.processed("p0", 10)
    assert cursors.stalled(now=102.0) == [], "reading on from the expected offset ends the gap"
