"""The host agent: collectors that read /proc and /sys, a drift-free sampler, and the Kafka publisher."""

__all__ = [
    "agent", "collectors", "fast_read", "metrics", "publisher", "recording", "registry", "sampler",
    "source_table", "spool", "synthetic"
]
