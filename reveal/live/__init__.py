"""The embedded run's live page and query service: what `reveal run` shows in a browser while it runs, and how
`reveal sql` and `reveal report` read a data folder that a run is writing."""

__all__ = ["client", "page", "server"]
