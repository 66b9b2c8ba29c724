"""KafkaFramePublisher with no broker to reach: its producer settings, frames spooled to disk and kept for the next
run, and the health it reports (delivery to a real broker is tested in tests/integration)."""

from producers.publisher import BLOCK_LINGER_MS, MESSAGE_BYTES_LIMIT, KafkaFramePublisher, producer_config
from producers.spool import DiskSpool, SpooledRecord
from producers.synthetic import synthetic_catalog, synthetic_frames
from schemas.records import decode_catalog, decode_frame, decode_frames
from schemas.topics import TopicNames

NO_BROKER = "127.0.0.1:1"


def test_the_producer_is_idempotent_and_compressing_and_takes_extra_settings():
    config = producer_config("kafka:9092", {"linger.ms": 5, "client.id": "agent-h1"})
    assert (config["bootstrap.servers"], config["enable.idempotence"], config["acks"]) == ("kafka:9092", True, "all")
    assert config["compression.type"] == "lz4"
    assert (config["linger.ms"], config["client.id"]) == (5, "agent-h1")
    assert producer_config("kafka:9092")["linger.ms"] == 200


def test_a_publisher_sending_blocks_of_frames_lingers_only_briefly():
    assert producer_config("kafka:9092", frames_per_message=10)["linger.ms"] == BLOCK_LINGER_MS < 200
    assert producer_config("kafka:9092", {"linger.ms": 50}, frames_per_message=10)["linger.ms"] == 50
    by_block = KafkaFramePublisher(NO_BROKER, frames_per_message=10)
    by_frame = KafkaFramePublisher(NO_BROKER)
    assert (by_block._config["linger.ms"], by_frame._config["linger.ms"]) == (BLOCK_LINGER_MS, 200)
    by_block.producer.flush(0), by_frame.producer.flush(0)


def test_frames_go_to_the_spool_while_kafka_is_away_and_stay_there_for_the_next_run(tmp_path):
    catalog = synthetic_catalog("h1")
    frames = synthetic_frames(catalog, 10**18, 3)
    publisher = KafkaFramePublisher(NO_BROKER, spool_dir=tmp_path, start_spooling=True)
    publisher.on_catalog(catalog)
    for frame in frames:
        publisher.on_frame(frame)
    health = publisher.health()
    assert (publisher.backlog(), publisher.stats.spooled, publisher.stats.sent) == (4, 3, 0)  # records, frames
    assert health["agent.spool_records"] == 4.0 and health["agent.spool_bytes"] > 0
    assert health["agent.frames_sent"] == 0.0 and health["agent.dropped_frames"] == 0.0
    assert publisher.close(timeout_s=0.1) == 4
    left = DiskSpool(tmp_path)
    records = left.peek(10)
    left.close()
    topics = TopicNames()
    assert [record.topic for record in records] == [topics.catalog] + [topics.samples] * 3
    assert {record.key for record in records} == {b"h1"}
    assert decode_catalog(records[0].value).names == catalog.names
    assert [decode_frame(record.value).sequence for record in records[1:]] == [0, 1, 2]


def test_a_block_of_frames_travels_as_one_message_and_a_short_block_when_it_ends(tmp_path):
    frames = synthetic_frames(synthetic_catalog("h1"), 10**18, 7)
    publisher = KafkaFramePublisher(NO_BROKER, spool_dir=tmp_path, start_spooling=True, frames_per_message=3)
    for frame in frames[:5]:
        publisher.on_frame(frame)
    publisher.end_block()
    for frame in frames[5:]:
        publisher.on_frame(frame)
    assert (publisher.backlog(), publisher.stats.spooled) == (2, 5), "the third block is not full yet"
    assert publisher.close(timeout_s=0.1) == 3
    left = DiskSpool(tmp_path)
    messages = [[frame.sequence for frame in decode_frames(record.value)] for record in left.peek(10)]
    left.close()
    assert messages == [[0, 1, 2], [3, 4], [5, 6]]


def test_a_block_too_large_for_one_kafka_message_is_split_below_the_limit(tmp_path):
    catalog = synthetic_catalog("h1", gauges=20_000, counters=0)
    frames = synthetic_frames(catalog, 10**18, 10)  # 160 KB each: a block of ten would be 1.6 MB
    publisher = KafkaFramePublisher(NO_BROKER, spool_dir=tmp_path, start_spooling=True, frames_per_message=10)
    for frame in frames:
        publisher.on_frame(frame)
    publisher.close(timeout_s=0.1)
    left = DiskSpool(tmp_path)
    records = left.peek(10)
    left.close()
    assert [len(decode_frames(record.value)) for record in records] == [3, 3, 3, 1]
    assert max(len(record.value) for record in records) <= MESSAGE_BYTES_LIMIT


def test_a_new_run_spools_behind_what_an_earlier_run_left(tmp_path):
    earlier = DiskSpool(tmp_path)
    earlier.append(SpooledRecord(TopicNames().samples, b"h1", b"from the earlier run"))
    earlier.close()
    publisher = KafkaFramePublisher(NO_BROKER, spool_dir=tmp_path)
    publisher.on_frame(synthetic_frames(synthetic_catalog("h1"), 10**18, 1)[0])
    assert publisher.stats.spooled == 1 and publisher.backlog() == 2
    assert publisher.close(timeout_s=0.1) == 2
    again = DiskSpool(tmp_path)
    assert [record.value for record in again.peek(10)][0] == b"from the earlier run" and len(again) == 2
    again.close()


def test_without_a_spool_frames_kafka_has_not_taken_are_counted_at_close():
    publisher = KafkaFramePublisher(NO_BROKER)
    publisher.on_frame(synthetic_frames(synthetic_catalog("h1"), 10**18, 1)[0])
    health = publisher.health()
    assert publisher.stats.sent == 1 and publisher.backlog() == 0 and publisher.spool is None
    assert (health["agent.spool_records"], health["agent.spool_bytes"], health["agent.dropped_frames"]) == (0, 0, 0)
    assert publisher.close(timeout_s=0.1) == 1
