"""The benchmarks behind `reveal bench`: the engine, the agent, the pipeline under a replayed fleet, and faults made
by hand on this host; each prints its figures against the project's goals."""

__all__ = [
    "agent", "engine", "host_faults", "paced_replay", "pipeline", "pipeline_figures", "pipeline_probes",
    "stack_profile"
]
