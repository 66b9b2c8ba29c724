"""Stream jobs: the pure detection engine (engine/), the host and cluster stages around it, and the runners that feed them: the Faust worker, the embedded runner and the offline runner."""

__all__ = [
    "allocator", "catalog_preload", "cluster_stage", "embedded", "engine", "host_stage",
    "live_state", "offline", "records", "storage", "worker"
]
