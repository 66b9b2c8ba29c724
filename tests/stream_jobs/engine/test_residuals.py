"""Signals that selection pruned, watched as their residuals from the kept signals that represent them: the fitted
line, its summary within a window and its saved state; through a host's pipeline, a small change in the ratio of two
tight channels is no event, and a channel that leaves its correlated channel is found by its residual."""

import json

import numpy as np
import pytest

from stream_jobs.engine.channels import ChannelTable
from stream_jobs.engine.host_pipeline import EngineSettings, HostPipeline
from stream_jobs.engine.residuals import Residuals

T0 = 1_700_000_000_000_000_000


def _line(rows: int = 200) -> np.ndarray:
    """x, y = 3 + 2x exactly (one row's y missing), and an unrelated z."""
    rng = np.random.default_rng(0)
    x = rng.normal(10.0, 2.0, rows)
    signal = np.column_stack([x, 3.0 + 2.0 * x, rng.normal(size=rows)])
    signal[5, 1] = np.nan
    return signal


def test_a_pruned_signal_is_fitted_as_a_line_on_its_representative_and_its_residual_is_what_the_line_misses():
    signal = _line()
    fitted = Residuals.fit(signal, ("x", "y", "z"), {"y": "x", "absent": "x"})
    assert fitted.dropped.tolist() == [1] and fitted.representative.tolist() == [0] and len(fitted) == 1
    assert fitted.slope[0] == pytest.approx(2.0) and fitted.intercept[0] == pytest.approx(3.0)
    assert fitted.level[0] == pytest.approx(np.nanmean(signal[:, 1]))
    means, spreads = fitted.summary(signal)
    assert abs(means[0]) < 1e-9 and spreads[0] < 1e-9
    shifted = signal.copy()
    shifted[:, 1] += 5.0
    assert fitted.summary(shifted)[0][0] == pytest.approx(5.0)


def test_a_representative_that_never_varied_explains_nothing_so_no_residual_is_watched():
    signal = np.column_stack([np.full(50, 7.0), np.arange(50.0)])
    assert len(Residuals.fit(signal, ("flat", "ramp"), {"ramp": "flat"})) == 0


def test_a_relation_that_does_not_hold_across_the_baseline_gives_no_residual():
    rng = np.random.default_rng(3)
    x = rng.normal(size=400)
    came_and_went = np.concatenate([2.0 * x[:200], rng.normal(size=200)])
    moved_apart = np.concatenate([x[:200], x[200:] + 5.0]) + 0.05 * rng.normal(size=400)
    held = 3.0 * x + 0.3 * rng.normal(size=400)
    signal = np.column_stack([x, came_and_went, moved_apart, held])
    fitted = Residuals.fit(signal, ("x", "came", "moved", "held"), {"came": "x", "moved": "x", "held": "x"})
    assert fitted.dropped.tolist() == [3] and fitted.slope[0] == pytest.approx(3.0, abs=0.1)


def test_too_few_rows_or_nothing_pruned_fits_nothing():
    assert len(Residuals.fit(np.ones((2, 2)), ("a", "b"), {"b": "a"})) == 0
    assert len(Residuals.fit(np.ones((10, 2)), ("a", "b"), {})) == 0
    means, spreads = Residuals.none().summary(np.ones((5, 2)))
    assert means.size == spreads.size == 0


def test_the_fit_survives_json_and_an_older_state_without_spread_or_level_still_reads():
    fitted = Residuals.fit(_line(), ("x", "y", "z"), {"y": "x"})
    restored = Residuals.from_json(json.loads(json.dumps(fitted.to_json())))
    for name in ("dropped", "representative", "intercept", "slope", "spread", "level"):
        np.testing.assert_array_equal(getattr(restored, name), getattr(fitted, name))
    older = {key: value for key, value in fitted.to_json().items() if key not in ("spread", "level")}
    assert Residuals.from_json(older).spread.tolist() == [0.0] and Residuals.from_json(older).level.tolist() == [0.0]
    assert len(Residuals.from_json(None)) == 0


def _bytes_and_segments(seconds: float, bytes_per_segment, extra_bytes, seed: int = 4):
    """Frames of two correlated network gauges: segments sent oscillate, bytes follow them closely."""
    rng = np.random.default_rng(seed)
    t = np.arange(0.0, seconds, 0.1)
    segments = 1000 + 500 * np.sin(2 * np.pi * t / 7.0) + rng.normal(0, 5, len(t))
    sent = bytes_per_segment(t) * segments + extra_bytes(t) + rng.normal(0, 2000, len(t))
    return [(T0 + int(s * 1e9), np.array([b, g])) for s, b, g in zip(t, sent, segments)]


def _judge_pair(bytes_per_segment, extra_bytes):
    table = ChannelTable(("net.sent_bytes", "net.sent_segments"), ("gauge", "gauge"), ("network", "network"))
    pipeline = HostPipeline(table, EngineSettings(warmup_s=60))
    verdicts = []
    for timestamp, values in _bytes_and_segments(300.0, bytes_per_segment, extra_bytes):
        verdicts += pipeline.push(timestamp, values)
    assert pipeline.columns.residuals.dropped.size == 1, "one gauge is watched as its residual from the other"
    return [v for v in verdicts if v.start_ns >= T0 + 200 * 10**9]


def test_a_small_change_in_the_ratio_of_two_tight_channels_is_not_an_event():
    after = _judge_pair(lambda t: np.where(t >= 200, 1386.0, 1400.0), lambda t: 0.0)
    assert not any(v.anomalous for v in after)


def test_a_channel_that_leaves_its_correlated_channel_by_its_own_spread_is_found():
    after = _judge_pair(lambda t: 1400.0, lambda t: np.where(t >= 200, 5e5, 0.0))
    flagged = [v for v in after if v.anomalous]
    assert len(flagged) >= 0.8 * len(after)
    top = flagged[0].evidence[0]
    assert (top.channel, top.feature) == ("net.sent_segments", "residual"), "the pruned channel's residual names the break"
