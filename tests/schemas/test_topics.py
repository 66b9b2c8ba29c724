"""Reveal's Kafka topics: names under a deployment's prefix, their partitions and retention, and a broker that does
not answer named in one error."""

import pytest

from schemas.topics import BrokerUnavailable, TopicNames, ensure_topics, topic_specs


def test_topic_names_carry_the_prefix():
    assert TopicNames().samples == "reveal.samples"
    names = TopicNames("test-1.")
    assert (names.samples, names.catalog, names.host_windows, names.anomalies, names.alerts, names.deadletter) == (
        "test-1.reveal.samples", "test-1.reveal.catalog", "test-1.reveal.host-windows", "test-1.reveal.anomalies",
        "test-1.reveal.alerts", "test-1.reveal.deadletter")


@pytest.mark.parametrize("prefix", ["a b.", "x/", "ü."])
def test_a_prefix_kafka_would_refuse_is_refused(prefix):
    with pytest.raises(ValueError, match="may hold only letters, digits"):
        TopicNames(prefix)


def test_samples_scale_out_by_host_and_the_catalog_keeps_the_latest_per_host():
    names = TopicNames("p.")
    specs = {spec.name: spec for spec in topic_specs(names, sample_partitions=12)}
    assert len(specs) == 6
    assert specs[names.samples].partitions == specs[names.catalog].partitions == 12
    assert specs[names.host_windows].partitions == 12 and specs[names.deadletter].partitions == 1
    assert specs[names.catalog].config == {"cleanup.policy": "compact"}
    day_ms = 24 * 3600 * 1000
    assert specs[names.samples].config == {"retention.ms": str(day_ms)}
    assert specs[names.alerts].config == {"retention.ms": str(30 * day_ms)}


def test_a_broker_that_does_not_answer_is_one_error_naming_it():
    with pytest.raises(BrokerUnavailable, match=r"Kafka at 127\.0\.0\.1:1 did not answer within 1 s"):
        ensure_topics({"bootstrap.servers": "127.0.0.1:1"}, TopicNames("unused."), timeout_s=1.0)
