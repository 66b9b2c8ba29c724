"""Every channel typed by the kernel's semantics: over a recorded busy run of a real host (a 400 MiB O_DIRECT write
and read, a fork storm, 1 GiB held, a CPU burner), no channel today's agent calls a gauge only ever rose, and none it
calls a counter ever fell."""

from pathlib import Path

import numpy as np

from producers.agent import Agent, AgentSettings
from stream_jobs.offline.tables import load_table

RECORDING = Path(__file__).parents[1] / "fixtures" / "recordings" / "busy-vm.avro"


def todays_kinds() -> dict[str, str]:
    """The kinds this host's agent gives its channels now (the recording keeps the kinds of the day it was made)."""
    seen = []
    sink = type("Sink", (), {"on_catalog": lambda self, c: seen.append(c), "on_frame": lambda self, f: None})()
    agent = Agent(AgentSettings(host="kinds"), sink)
    try:
        agent.sample_once()
    finally:
        agent.close()
    return {c.name: c.kind for c in seen[-1].channels}


def recorded_steps() -> tuple[tuple[str, ...], np.ndarray]:
    host = next(iter(load_table(RECORDING).hosts.values()))
    return host.channels.names, np.diff(host.values, axis=0)


def test_no_gauge_only_rises_and_no_counter_falls():
    kinds = todays_kinds()
    names, steps = recorded_steps()
    typed = [(name, kinds[name], steps[:, j][np.isfinite(steps[:, j])]) for j, name in enumerate(names)
             if name in kinds]
    assert len(typed) > 100, "the recording and this host share most channels"
    rising_gauges = [name for name, kind, step in typed
                     if kind == "gauge" and len(step) > 10 and (step >= 0).all() and (step > 0).sum() >= 2]
    falling_counters = [name for name, kind, step in typed if kind in ("counter", "event") and (step < 0).any()]
    assert rising_gauges == [] and falling_counters == []
