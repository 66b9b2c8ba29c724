"""The Kafka topics Reveal uses, with their partitioning and retention, and their creation through the admin client."""

from __future__ import annotations

from dataclasses import dataclass, field

SAMPLES = "reveal.samples"
CATALOG = "reveal.catalog"
ANOMALIES = "reveal.anomalies"
ALERTS = "reveal.alerts"
HOST_WINDOWS = "reveal.host-windows"
DEADLETTER = "reveal.deadletter"

_DAY_MS = 24 * 3600 * 1000


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    config: dict = field(default_factory=dict)


def topic_specs(sample_partitions: int = 6) -> tuple[TopicSpec, ...]:
    """Samples are keyed by host and partitioned for scale-out; the catalog is compacted (latest per host)."""
    return (
        TopicSpec(SAMPLES, sample_partitions, {"retention.ms": str(_DAY_MS), "compression.type": "producer"}),
        TopicSpec(CATALOG, sample_partitions, {"cleanup.policy": "compact"}),
        TopicSpec(HOST_WINDOWS, sample_partitions, {"retention.ms": str(_DAY_MS)}),
        TopicSpec(ANOMALIES, 3, {"retention.ms": str(7 * _DAY_MS)}),
        TopicSpec(ALERTS, 3, {"retention.ms": str(30 * _DAY_MS)}),
        TopicSpec(DEADLETTER, 1, {"retention.ms": str(30 * _DAY_MS)}),
    )


def ensure_topics(admin_config: dict, sample_partitions: int = 6, replication: int = 1,
                  timeout_s: float = 30.0) -> list[str]:
    """Create any missing Reveal topic; returns the names created. Existing topics are left as they are."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(admin_config)
    existing = set(admin.list_topics(timeout=timeout_s).topics)
    wanted = [spec for spec in topic_specs(sample_partitions) if spec.name not in existing]
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
        except Exception as error:  # a concurrent creator is fine; anything else is not
            if "TOPIC_ALREADY_EXISTS" not in str(error):
                raise
    return created
