"""Reveal's wire contracts: Avro schemas, the records they mirror, and the Kafka topics that carry them."""
