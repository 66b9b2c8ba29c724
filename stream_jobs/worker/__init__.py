"""The distributed worker: a Faust app that feeds Kafka records to the host and cluster stages and stores results."""

__all__ = ["agents", "app", "backoff", "metrics", "offset_releases", "offsets", "shell", "transport"]
