"""A restarted worker's catalogs, read from the beginning of the compacted catalog topic of the real broker: none from
an empty topic just created (its leaders waited for); every host's from a filled one, a record that is not a catalog
left out."""

import pytest

from producers.synthetic import synthetic_catalog
from schemas.records import encode_catalog
from schemas.topics import TopicNames, ensure_topics
from stream_jobs.catalog_preload import read_catalogs
from tests.integration.kafka_io import publish

pytestmark = pytest.mark.integration


def test_every_catalog_on_the_topic_is_read_and_a_record_that_is_not_one_is_left_out(kafka_bootstrap, topic_prefix,
                                                                                     caplog):
    names = TopicNames(topic_prefix)
    ensure_topics({"bootstrap.servers": kafka_bootstrap}, names, sample_partitions=2)
    assert read_catalogs(kafka_bootstrap, names.catalog, timeout_s=30.0) == []
    catalogs = [synthetic_catalog(f"preload-{index}") for index in range(3)]
    records = [(catalog.host.encode(), encode_catalog(catalog)) for catalog in catalogs]
    publish(kafka_bootstrap, names.catalog, records[:2] + [(b"preload-9", b"not a catalog")] + records[2:])
    read = read_catalogs(kafka_bootstrap, names.catalog, timeout_s=30.0)
    assert sorted(read, key=lambda catalog: catalog.host) == catalogs
    assert "left out" in caplog.text
