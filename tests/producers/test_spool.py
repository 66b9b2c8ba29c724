"""DiskSpool: records in order across segments and runs, the size bound dropping the oldest segment, damage read up
to, and any interleaving of appends and replays kept in order."""

from hypothesis import given, settings, strategies as st

from producers.spool import DiskSpool, SpooledRecord


def records(count: int, start: int = 0) -> list[SpooledRecord]:
    return [SpooledRecord("reveal.samples", b"host-a", f"frame-{i}".encode() * 10) for i in range(start, start + count)]


def test_records_come_back_in_order_and_release_removes_them(tmp_path):
    spool = DiskSpool(tmp_path, segment_bytes=500)
    for record in records(50):
        spool.append(record)
    assert len(spool) == 50
    first = spool.peek(20)
    assert first == records(20)
    spool.release(20)
    assert spool.peek(1000) == records(30, start=20)
    spool.release(30)
    assert len(spool) == 0 and spool.peek(10) == []


def test_appends_during_replay_land_behind_what_is_being_replayed(tmp_path):
    spool = DiskSpool(tmp_path, segment_bytes=300)
    for record in records(10):
        spool.append(record)
    head = spool.peek(4)
    for record in records(5, start=10):
        spool.append(record)
    spool.release(len(head))
    assert spool.peek(100) == records(11, start=4)


def test_a_new_run_replays_what_an_earlier_run_left(tmp_path):
    spool = DiskSpool(tmp_path)
    for record in records(7):
        spool.append(record)
    spool.close()
    again = DiskSpool(tmp_path)
    assert len(again) == 7 and again.peek(10) == records(7)


def test_the_bound_drops_the_oldest_segment_and_counts_it(tmp_path):
    spool = DiskSpool(tmp_path, max_bytes=2000, segment_bytes=500)
    for record in records(100):
        spool.append(record)
    assert spool.size_bytes <= 2000 + 500
    assert spool.dropped_records > 0
    kept = spool.peek(1000)
    assert len(kept) + spool.dropped_records == 100
    assert kept == records(len(kept), start=100 - len(kept))


def test_a_damaged_segment_is_read_up_to_the_damage(tmp_path):
    spool = DiskSpool(tmp_path)
    for record in records(5):
        spool.append(record)
    spool.close()
    segment = next(tmp_path.glob("*.spool"))
    data = bytearray(segment.read_bytes())
    data[-3] ^= 0xFF
    segment.write_bytes(bytes(data))
    assert DiskSpool(tmp_path).peek(10) == records(4)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["append", "replay"]), st.integers(1, 20)), max_size=30))
def test_any_interleaving_keeps_fifo_order(tmp_path_factory, operations):
    spool = DiskSpool(tmp_path_factory.mktemp("spool"), segment_bytes=400)
    appended, replayed = 0, []
    for operation, count in operations:
        if operation == "append":
            for record in records(count, start=appended):
                spool.append(record)
            appended += count
        else:
            batch = spool.peek(count)
            replayed += batch
            spool.release(len(batch))
    replayed += spool.peek(10**6)
    assert replayed == records(appended)
