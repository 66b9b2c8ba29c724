"""Records are released in partition order, only once their host no longer needs them, never past the bound; each
partition is processed in offset order from its start, and a record past the expected offset asks for a re-read."""

from stream_jobs.worker.offset_releases import ReadCursors, ReleaseTracker, Verdict

S = 10**9


class Partition:
    """Offsets handed out in order, as a partition delivers them."""

    def __init__(self, tracker: ReleaseTracker, name: str = "p0"):
        self.tracker, self.name, self.next = tracker, name, 0

    def consume(self) -> int:
        offset, self.next = self.next, self.next + 1
        self.tracker.consumed(self.name, offset)
        return offset

    def hold(self, host: str, seconds) -> list[int]:
        offsets = []
        for second in seconds:
            offsets.append(self.consume())
            self.tracker.hold(host, self.name, second * S, offsets[-1])
        return offsets


def test_frames_are_released_once_older_than_what_the_host_still_needs():
    tracker = ReleaseTracker()
    Partition(tracker).hold("h", range(5))
    tracker.advance("h", 3 * S)
    assert tracker.take_ready() == [("p0", 0), ("p0", 1), ("p0", 2)] and tracker.held() == 2
    tracker.advance("h", None)
    assert tracker.take_ready() == [("p0", 3), ("p0", 4)] and tracker.held() == 0


def test_a_host_still_needing_a_frame_holds_back_later_records_of_its_partition():
    tracker = ReleaseTracker()
    p0, p1 = Partition(tracker, "p0"), Partition(tracker, "p1")
    p0.hold("a", [0])
    p0.hold("b", range(3))
    p0.consume()  # a catalog: nothing holds it
    p1.hold("c", range(2))
    tracker.advance("b", None)
    tracker.advance("c", None)
    assert tracker.take_ready() == [("p1", 0), ("p1", 1)] and tracker.held() == 1, "p0 waits for a's frame"
    tracker.advance("a", None)
    assert tracker.take_ready() == [("p0", offset) for offset in range(5)]


def test_records_put_back_after_a_failed_flush_come_first_next_time():
    tracker = ReleaseTracker()
    catalogs = Partition(tracker, "catalogs")
    catalogs.consume()
    failed = tracker.take_ready()
    catalogs.consume()
    tracker.put_back(failed)
    assert tracker.take_ready() == [("catalogs", 0), ("catalogs", 1)]


def test_a_host_holds_at_most_max_held_s_of_frames():
    tracker = ReleaseTracker(max_held_s=10)
    Partition(tracker).hold("h", range(30))
    tracker.advance("h", 0)
    assert tracker.take_ready() == [("p0", offset) for offset in range(19)]


def test_revoked_partitions_release_nothing():
    tracker = ReleaseTracker()
    Partition(tracker).hold("h", range(2))
    tracker.forget_all()
    tracker.advance("h", None)
    assert tracker.take_ready() == [] and tracker.held() == 0


def test_a_long_hold_costs_a_few_bytes_per_record_and_releases_in_order():
    tracker = ReleaseTracker(max_held_s=3600)
    partition = Partition(tracker)
    partition.hold("stuck", [0])
    for second in range(1, 50_001):
        partition.hold(f"h{second % 20}", [second])
        tracker.advance(f"h{second % 20}", None)
    assert tracker.take_ready() == [] and tracker.held() == 1
    assert tracker._unreleased["p0"]._values.itemsize == 8 and len(tracker._unreleased["p0"]) == 50_001
    tracker.advance("stuck", None)
    assert [offset for _, offset in tracker.take_ready()] == list(range(50_001))
    partition.consume()
    assert tracker.take_ready() == [("p0", 50_001)] and len(tracker._unreleased["p0"]._values) < 5_000


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
