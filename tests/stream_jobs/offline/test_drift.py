"""Through the whole engine, a level that moves slowly is absorbed while a short step is found: a channel that climbs
by 3σ over an hour and holds there flags no window, and a 6σ step held 20 s on one of 20 channels, or of 700, is
flagged and named first."""

import numpy as np
from hypothesis import given, settings, strategies as st

from stream_jobs.engine.settings import EngineSettings
from stream_jobs.offline.host_tables import empty_repairs, gauge_channels, repaired_host
from stream_jobs.offline.runner import judge_host

T0_S = 1_700_000_000
CHANNELS = 20
BASELINE_S, JUDGED_S = 7200, 7200


def table_of(values: np.ndarray, first_s: int):
    """One host's rows, one a second from `first_s`, of gauges m00 … m19."""
    timestamps = (T0_S + first_s + np.arange(len(values), dtype=np.int64)) * 10**9
    return repaired_host("h", "offline", gauge_channels([f"m{i:02d}" for i in range(CHANNELS)]), timestamps, values,
                         empty_repairs())


def judged(seed: int, change) -> list:
    """The judged hour's verdicts against a clean baseline, after `change(values)` moved the judged rows."""
    rng = np.random.default_rng(seed)
    baseline = table_of(rng.normal(0.0, 1.0, (BASELINE_S, CHANNELS)), 0)
    values = rng.normal(0.0, 1.0, (JUDGED_S, CHANNELS))
    change(values)
    return judge_host(table_of(values, BASELINE_S), baseline, EngineSettings())[1]


@settings(max_examples=3, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**16), channel=st.integers(0, CHANNELS - 1))
def test_a_level_that_climbs_3_sigma_over_an_hour_is_absorbed(seed, channel):
    def climb(values):
        values[:, channel] += 3.0 * np.clip(np.arange(len(values)) / 3600.0, 0.0, 1.0)

    flagged = [v.window_id for v in judged(seed, climb) if v.anomalous]
    assert flagged == [], f"m{channel:02d} climbing 3σ in an hour flagged {len(flagged)} windows"


@settings(max_examples=3, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**16), channel=st.integers(0, CHANNELS - 1))
def test_a_6_sigma_step_held_20_s_is_found_and_named_first(seed, channel):
    def step(values):
        values[3000:3020, channel] += 6.0

    flagged = [v for v in judged(seed, step) if v.anomalous]
    assert flagged, f"a 6σ step on m{channel:02d} held 20 s was not found"
    assert all(v.ranked_channels[0] == f"m{channel:02d}" for v in flagged), [v.ranked_channels[:3] for v in flagged]


WIDE = 700


@settings(max_examples=2, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**16), channel=st.integers(0, WIDE - 1))
def test_a_6_sigma_step_held_20_s_on_one_of_700_channels_is_found_and_named_first(seed, channel):
    names = [f"w{i:03d}" for i in range(WIDE)]

    def wide(values: np.ndarray, first_s: int):
        timestamps = (T0_S + first_s + np.arange(len(values), dtype=np.int64)) * 10**9
        return repaired_host("h", "offline", gauge_channels(names), timestamps, values, empty_repairs())

    rng = np.random.default_rng(seed)
    baseline, values = rng.normal(size=(1800, WIDE)), rng.normal(size=(600, WIDE))
    values[300:320, channel] += 6.0
    flagged = [v for v in judge_host(wide(values, 1800), wide(baseline, 0), EngineSettings())[1] if v.anomalous]
    assert flagged, f"a 6σ step on {names[channel]} held 20 s was not found"
    assert all(v.ranked_channels[0] == names[channel] for v in flagged), [v.ranked_channels[:3] for v in flagged]
