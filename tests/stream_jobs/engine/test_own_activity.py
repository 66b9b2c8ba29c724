"""A window carries Reveal's own load when the agent's counter of command seconds rose in it or shortly before."""

from __future__ import annotations

import numpy as np

from schemas.channels import OWN_COMMANDS_SECONDS
from stream_jobs.engine.own_activity import OWN_ACTIVITY_SETTLE_S, OwnActivity

NAMES = ("cpu.busy.cpu0", OWN_COMMANDS_SECONDS)
S = 1_000_000_000


def window(start_s: float, counter: list[float]) -> tuple[np.ndarray, np.ndarray, int]:
    times = np.array([round((start_s + 0.5 * i) * S) for i in range(len(counter))], dtype=np.int64)
    return times, np.column_stack([np.full(len(counter), 40.0), counter]), round(start_s * S)


def test_a_rise_marks_the_window_and_the_settling_time_after_it():
    own = OwnActivity(NAMES)
    assert not own.in_window(*window(0.0, [0, 0, 0, 0]))
    assert own.in_window(*window(1.0, [0, 0, 0.4, 0.9]))
    assert own.in_window(*window(1.0 + OWN_ACTIVITY_SETTLE_S, [0.9] * 4))
    assert not own.in_window(*window(3.0 + OWN_ACTIVITY_SETTLE_S, [0.9] * 4))


def test_hosts_without_the_counter_and_gaps_in_it_mark_nothing():
    assert not OwnActivity(("cpu.busy.cpu0",)).in_window(np.array([0, S]), np.ones((2, 1)), 0)
    own = OwnActivity(NAMES)
    assert not own.in_window(*window(0.0, [np.nan, 1.0, np.nan, 1.0]))


def test_windows_of_reveals_own_load_are_not_learned_as_the_hosts_baseline():
    """A burst while Reveal's commands run during learning would widen the host's bands; it is left out."""
    from producers.synthetic import synthetic_catalog, synthetic_frames
    from schemas.records import Channel, Catalog
    from stream_jobs.engine.channels import ChannelTable
    from stream_jobs.engine.host_pipeline import EngineSettings, HostPipeline

    base = synthetic_catalog("h")
    catalog = Catalog("h", "c", base.channels + (Channel(OWN_COMMANDS_SECONDS, "agent", "counter", "s"),))
    column, cpu = catalog.names.index(OWN_COMMANDS_SECONDS), catalog.names.index("cpu.busy.cpu0")
    sigmas = {}
    for noted in (False, True):
        pipeline = HostPipeline(ChannelTable.of_catalog(catalog), EngineSettings(warmup_windows=20))
        for frame in synthetic_frames(catalog, 0, 400, seed=2):
            values = np.array(frame.values, dtype=np.float64)
            burst = 50 <= frame.sequence < 80
            values[cpu] += 50.0 if burst else 0.0
            values[column] = min(max(frame.sequence - 50, 0), 30) * 0.1 if noted else 0.0
            pipeline.push(frame.timestamp_ns, values)
        assert pipeline.baseline_ready
        sigmas[noted] = float(pipeline.watch.bands.sigma[pipeline.signal_names.index("cpu.busy.cpu0")])
    assert sigmas[True] < sigmas[False] / 3
