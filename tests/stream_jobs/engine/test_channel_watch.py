"""The per-channel watch: bands with effect floors, persistence, drift following and adoption of new levels."""

import numpy as np
import pytest

from stream_jobs.engine.channel_watch import ChannelBands, ChannelWatch, WatchSettings, event_floor

SETTINGS = WatchSettings(persist_windows=4, history_stride=1, history_windows=400, adopt_after=60)


def baseline(rng, windows=400):
    """Three channels: a noisy gauge around 100, a near-constant gauge at 5e9, a counter that never moved."""
    return np.column_stack([100 + rng.normal(0, 2, windows), 5e9 + rng.normal(0, 10, windows), np.zeros(windows)])


def watch(rng, settings=SETTINGS):
    floors = event_floor(np.array([False, False, True]), window_s=3.0, min_events=5.0)
    return ChannelWatch(floors, settings).fit(baseline(rng))


def test_a_departure_counts_only_after_persist_windows_and_names_its_channel():
    w = watch(np.random.default_rng(1))
    verdicts = [w.judge(np.array([140.0, 5e9, 0.0])) for _ in range(5)]
    assert [v.flagged for v in verdicts] == [False, False, False, True, True]
    assert verdicts[-1].persisted.tolist() == [True, False, False]
    assert verdicts[-1].departure[0] > 1 and verdicts[-1].z[0] > 10


def test_one_burst_seen_by_three_overlapping_windows_is_not_a_finding():
    w = watch(np.random.default_rng(2))
    values = [np.array([100.0, 5e9, 0.0])] * 3 + [np.array([300.0, 5e9, 0.0])] * 3 + [np.array([100.0, 5e9, 0.0])]
    assert not any(w.judge(v).flagged for v in values)


def test_noise_in_a_near_constant_channel_and_a_few_events_are_not_events():
    w = watch(np.random.default_rng(3))
    quiet = [w.judge(np.array([100.0, 5e9 + 1e5, 1.0])) for _ in range(10)]
    assert not any(v.flagged for v in quiet), "0.002 % of a level and 3 events per window stay inside"
    loud = [w.judge(np.array([100.0, 5e9, 50.0])) for _ in range(5)]
    assert loud[-1].persisted.tolist() == [False, False, True], "150 events per window on a counter that never moved"


def test_a_clean_stream_is_never_flagged():
    rng = np.random.default_rng(4)
    w = watch(rng)
    assert not any(w.judge(row).flagged for row in baseline(rng, 5000))


def test_bands_follow_slow_drift_when_refitted_but_a_fault_does_not_become_normal():
    rng = np.random.default_rng(5)
    w = watch(rng)
    flagged = 0
    for step in range(2000):
        drift = 100 + 0.01 * step + rng.normal(0, 2)
        flagged += w.judge(np.array([drift, 5e9, 0.0])).flagged
        if step % 100 == 99:
            assert w.refit()
    assert flagged == 0, "a level that moves by 20 over 2000 windows is followed"
    faulty = [w.judge(np.array([200.0, 5e9, 0.0])) for _ in range(30)]
    w.refit()
    assert all(v.flagged for v in faulty[3:]) and w.judge(np.array([200.0, 5e9, 0.0])).flagged


def test_a_level_that_stays_for_adopt_after_windows_is_adopted():
    w = watch(np.random.default_rng(6))
    verdicts = [w.judge(np.array([160.0, 5e9, 0.0])) for _ in range(SETTINGS.adopt_after + 10)]
    assert verdicts[SETTINGS.adopt_after - 2].flagged
    assert not verdicts[-1].flagged and w.bands.high[0] >= 160.0


def test_a_secondary_column_needs_the_larger_departure():
    floors = np.zeros(2)
    w = ChannelWatch(floors, SETTINGS, secondary=np.array([False, True]))
    w.fit(np.column_stack([np.linspace(0, 10, 100), np.linspace(0, 10, 100)]))
    verdicts = [w.judge(np.array([22.0, 22.0])) for _ in range(5)]
    assert verdicts[-1].persisted.tolist() == [True, False]


def test_bands_survive_json_and_settings_refuse_nonsense():
    bands = ChannelBands.fit(baseline(np.random.default_rng(7)), np.zeros(3), SETTINGS)
    again = ChannelBands.from_json(bands.to_json())
    np.testing.assert_array_equal(np.nan_to_num(again.width), np.nan_to_num(bands.width))
    with pytest.raises(ValueError, match="adopt_after"):
        WatchSettings(persist_windows=4, adopt_after=4)
    with pytest.raises(ValueError, match="low_quantile"):
        WatchSettings(low_quantile=0.9, high_quantile=0.1)
