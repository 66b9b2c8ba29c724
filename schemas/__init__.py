"""Reveal's wire contracts: Avro schemas, the records they mirror, and the Kafka topics that carry them."""

__all__ = ["channels", "codec", "kafka_security", "records", "topics"]
