"""The application people run on top of the data path: the `reveal` command (one module per subcommand), the
fault-injection lab, the report, the live page of an embedded run, alert routing and the benchmarks. Nothing in
producers/, schemas/, stream_jobs/ or sinks/ imports it."""

__all__ = ["alert_routing", "bench", "cli", "lab", "live", "report"]
