"""The host agent: collectors that read /proc and /sys, a drift-free sampler, and the Kafka publisher."""
