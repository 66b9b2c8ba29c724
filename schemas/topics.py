"""The Kafka topics Reveal uses, with their partitioning and retention, and their creation through the admin client."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_DAY_MS = 24 * 3600 * 1000
_PREFIX = re.compile(r"^[A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class TopicNames:
    """Reveal's topic names; a prefix keeps several deployments (or test runs) apart on one cluster."""

    prefix: str = ""

    def __post_init__(self):
        if not _PREFIX.match(self.prefix):
            raise ValueError(f"topic prefix {self.prefix!r} may hold only letters, digits, '.', '_' and '-'")

    @property
    def samples(self) -> str:
        return f"{self.prefix}reveal.samples"

    @property
    def catalog(self) -> str:
        return f"{self.prefix}reveal.catalog"

    @property
    def host_windows(self) -> str:
        return f"{self.prefix}reveal.host-windows"

    @property
    def anomalies(self) -> str:
        return f"{self.prefix}reveal.anomalies"

    @property
    def alerts(self) -> str:
        return f"{self.prefix}reveal.alerts"

    @property
    def deadletter(self) -> str:
        return f"{self.prefix}reveal.deadletter"


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    config: dict = field(default_factory=dict)


def topic_specs(names: TopicNames, sample_partitions: int = 6) -> tuple[TopicSpec, ...]:
    """Samples are keyed by host and partitioned for scale-out; the catalog is compacted (latest per host)."""
    return (
        TopicSpec(names.samples, sample_partitions, {"retention.ms": str(_DAY_MS)}),
        TopicSpec(names.catalog, sample_partitions, {"cleanup.policy": "compact"}),
        TopicSpec(names.host_windows, sample_partitions, {"retention.ms": str(_DAY_MS)}),
        TopicSpec(names.anomalies, 3, {"retention.ms": str(7 * _DAY_MS)}),
        TopicSpec(names.alerts, 3, {"retention.ms": str(30 * _DAY_MS)}),
        TopicSpec(names.deadletter, 1, {"retention.ms": str(30 * _DAY_MS)}),
    )


class BrokerUnavailable(RuntimeError):
    """The Kafka cluster did not answer; the message names the bootstrap servers."""


def ensure_topics(admin_config: dict, names: TopicNames = TopicNames(), sample_partitions: int = 6,
                  replication: int = 1, timeout_s: float = 30.0) -> list[str]:
    """Create any missing Reveal topic; returns the names created. Existing topics are left as they are."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"log_level": 0, **admin_config})  # one BrokerUnavailable, not a librdkafka line per retry
    try:
        existing = set(admin.list_topics(timeout=timeout_s).topics)
    except KafkaException as error:
        raise BrokerUnavailable(f"Kafka at {admin_config.get('bootstrap.servers')} did not answer within "
                                f"{timeout_s:.0f} s ({error}); is the broker running (infra/kafka/start.sh)?") from None
    wanted = [spec for spec in topic_specs(names, sample_partitions) if spec.name not in existing]
    if not wanted:
        return []
    futures = admin.create_topics(
        [NewTopic(s.name, num_partitions=s.partitions, replication_factor=replication, config=s.config) for s in wanted],
        operation_timeout=timeout_s)
    created = []
    for name, future in futures.items():
        try:
            future.result(timeout_s)
            created.append(name)
        except KafkaException as error:  # a concurrent creator is fine; anything else is not
            if "TOPIC_ALREADY_EXISTS" not in str(error):
                raise
    return created

