"""Pure noise judged against another sample of the same process flags nothing in 10 simulated host-hours, whatever
the process: Gaussian at any level, Poisson counts, heavy tails, a strongly autocorrelated series, and a periodic
signal locked to the stride. A promise of 0.5 false findings a day allows 0.2 in 10 hours."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from stream_jobs.engine.settings import EngineSettings
from stream_jobs.offline.host_tables import empty_repairs, gauge_channels, repaired_host
from stream_jobs.offline.runner import judge_host

T0_S = 1_700_000_000
CHANNELS = 20
BASELINE_S, JUDGED_S = 2 * 3600, 10 * 3600
# One row a second, judged in 6 s windows every 2 s: 18,000 windows in 10 host-hours.
JUDGING = EngineSettings(window_s=6.0, stride_s=2.0, interval_s=1.0)


def autoregressive(rng: np.random.Generator, rows: int, phi: float = 0.95) -> np.ndarray:
    """AR(1) with unit innovations, started in its stationary distribution."""
    shocks = rng.normal(size=(rows, CHANNELS))
    values = np.empty_like(shocks)
    values[0] = shocks[0] / np.sqrt(1 - phi ** 2)
    for row in range(1, rows):
        values[row] = phi * values[row - 1] + shocks[row]
    return values


def locked_to_stride(rng: np.random.Generator, rows: int) -> np.ndarray:
    """A sine of period 2 s (the stride) at a fixed phase, under a tenth of its amplitude of noise."""
    phase = 2 * np.pi * (np.arange(rows)[:, None] + 0.5) / 2.0
    return 3.0 * np.sin(phase) + rng.normal(0.0, 0.3, (rows, CHANNELS))


PROCESSES = {
    "gaussian at 0": lambda rng, rows: rng.normal(0.0, 1.0, (rows, CHANNELS)),
    "gaussian at -50": lambda rng, rows: rng.normal(-50.0, 1.0, (rows, CHANNELS)),
    "gaussian at 1e6": lambda rng, rows: rng.normal(1e6, 1.0, (rows, CHANNELS)),
    "poisson counts": lambda rng, rows: rng.poisson(3.0, (rows, CHANNELS)).astype(np.float64),
    "student t, 3 degrees of freedom": lambda rng, rows: rng.standard_t(3, (rows, CHANNELS)),
    "ar(1), phi 0.95": autoregressive,
    "periodic, locked to the stride": locked_to_stride,
}


def host_table(values: np.ndarray, first_s: int):
    timestamps = (T0_S + first_s + np.arange(len(values), dtype=np.int64)) * 10**9
    return repaired_host("h", "offline", gauge_channels([f"m{i:02d}" for i in range(CHANNELS)]), timestamps, values,
                         empty_repairs())


@pytest.mark.parametrize("process", PROCESSES)
@settings(max_examples=2, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**16))
def test_pure_noise_flags_nothing_in_ten_host_hours(process, seed):
    rng = np.random.default_rng(seed)
    baseline = host_table(PROCESSES[process](rng, BASELINE_S), 0)
    judged = host_table(PROCESSES[process](rng, JUDGED_S), BASELINE_S)
    verdicts = judge_host(judged, baseline, JUDGING)[1]
    flagged = [(v.detectors, v.claim) for v in verdicts if v.anomalous]
    assert len(verdicts) > 17_900 and flagged == [], f"{process}: {len(flagged)} windows flagged, e.g. {flagged[:3]}"
