"""The agent on this host publishes its catalog and numbered frames to the real broker."""

import pytest

from producers.agent import Agent, AgentSettings
from producers.publisher import KafkaFramePublisher
from schemas.records import decode_catalog, decode_frame
from schemas.topics import TopicNames, ensure_topics
from tests.integration.kafka_io import read_topic

pytestmark = pytest.mark.integration


def test_agent_frames_arrive_in_order_with_their_catalog(kafka_bootstrap, topic_prefix):
    names = TopicNames(topic_prefix)
    assert len(ensure_topics({"bootstrap.servers": kafka_bootstrap}, names)) == 6
    publisher = KafkaFramePublisher(kafka_bootstrap, topics=names)
    agent = Agent(AgentSettings(host="agent-test", cluster="ci", interval_s=0.05), publisher)
    stats = agent.run(lambda: agent.sequence >= 40)
    assert publisher.close() == 0 and publisher.stats.failed == 0

    catalogs = [decode_catalog(m.value()) for m in read_topic(kafka_bootstrap, names.catalog, 1)]
    frames = [decode_frame(m.value()) for m in read_topic(kafka_bootstrap, names.samples, 40)]
    assert catalogs[0].host == "agent-test" and len(catalogs[0].channels) > 50
    assert [f.sequence for f in frames] == list(range(40))
    assert all(f.catalog_version == catalogs[0].version and len(f.values) == len(catalogs[0].channels)
               for f in frames)
    assert {m.key() for m in read_topic(kafka_bootstrap, names.samples, 40)} == {b"agent-test"}
    assert stats.ticks == 40


def test_ensure_topics_is_idempotent_and_compacts_the_catalog(kafka_bootstrap, topic_prefix):
    from confluent_kafka.admin import AdminClient, ConfigResource

    names = TopicNames(topic_prefix)
    config = {"bootstrap.servers": kafka_bootstrap}
    assert len(ensure_topics(config, names)) == 6
    assert ensure_topics(config, names) == []
    resource = ConfigResource("topic", names.catalog)
    admin = AdminClient(config)
    described = admin.describe_configs([resource])[resource].result(30)
    assert described["cleanup.policy"].value == "compact"
