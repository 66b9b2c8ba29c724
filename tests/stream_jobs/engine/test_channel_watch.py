"""The per-channel watch: bands with effect floors, persistence, drift following and adoption of new levels."""

import numpy as np
import pytest

from stream_jobs.engine.channel_watch import ChannelBands, ChannelWatch, WatchSettings, counts_things, event_floor

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


def test_a_level_that_flickers_back_into_its_band_now_and_then_is_adopted_too():
    """A new level that returns to the old one for a window every so often has changed as much as one that never
    returns; counted by runs alone it would stay a finding, and hold its incident open, for good."""
    w = watch(np.random.default_rng(6))
    levels = [100.0 if window % 10 == 9 else 160.0 for window in range(3 * SETTINGS.adopt_after)]
    verdicts = [w.judge(np.array([level, 5e9, 0.0])) for level in levels]
    assert verdicts[SETTINGS.adopt_after // 2 + 5].flagged
    assert not any(v.flagged for v in verdicts[-SETTINGS.adopt_after:]) and w.bands.high[0] >= 160.0


def test_a_secondary_column_needs_the_larger_departure():
    floors = np.zeros(2)
    w = ChannelWatch(floors, SETTINGS, secondary=np.array([False, True]))
    w.fit(np.column_stack([np.linspace(0, 10, 100), np.linspace(0, 10, 100)]))
    verdicts = [w.judge(np.array([22.0, 22.0])) for _ in range(5)]
    assert verdicts[-1].persisted.tolist() == [True, False]


def test_a_column_that_counts_only_when_it_rises_ignores_a_fall_below_its_band():
    w = ChannelWatch(np.zeros(2), SETTINGS, rising_only=np.array([False, True]))
    w.fit(np.column_stack([np.linspace(10, 20, 100), np.linspace(10, 20, 100)]))
    fallen = [w.judge(np.array([-5.0, -5.0])) for _ in range(5)]
    assert fallen[-1].persisted.tolist() == [True, False]
    risen = [w.judge(np.array([35.0, 35.0])) for _ in range(5)]
    assert risen[-1].persisted.tolist() == [True, True]


def test_bands_survive_json_and_settings_refuse_nonsense():
    bands = ChannelBands.fit(baseline(np.random.default_rng(7)), np.zeros(3), SETTINGS)
    again = ChannelBands.from_json(bands.to_json())
    np.testing.assert_array_equal(np.nan_to_num(again.width), np.nan_to_num(bands.width))
    with pytest.raises(ValueError, match="adopt_after"):
        WatchSettings(persist_windows=4, adopt_after=4)
    with pytest.raises(ValueError, match="low_quantile"):
        WatchSettings(low_quantile=0.9, high_quantile=0.1)


def peaky_baseline(windows=400):
    """A busy gauge at 100 that peaks to 1000 for 3 windows every 50 (a step's burst), as consecutive window means."""
    level = np.full(windows, 100.0) + np.random.default_rng(8).normal(0, 2, windows)
    for start in range(20, windows, 50):
        level[start:start + 3] = 1000.0
    return level[:, None]


def test_a_level_held_far_longer_than_the_baselines_peaks_counts_though_it_stays_inside_the_band():
    w = ChannelWatch(np.zeros(1), SETTINGS).fit(peaky_baseline())
    assert not any(w.judge(row).flagged for row in peaky_baseline()), "the baseline's own peaks are never findings"
    held = [w.judge(np.array([900.0])) for _ in range(SETTINGS.sustained_windows + 4)]
    assert held[0].departure[0] == 0.0, "900 lies inside the band the peaks span"
    flagged = [v.flagged for v in held]
    assert flagged.index(True) == SETTINGS.sustained_windows - 1 and all(flagged[SETTINGS.sustained_windows - 1:])
    assert held[-1].departure[0] > 1 and held[-1].persisted.tolist() == [True]


def test_a_short_baseline_gets_no_sustained_band():
    assert ChannelWatch(np.zeros(1), SETTINGS).fit(peaky_baseline(200)).sustained is None
    w = ChannelWatch(np.zeros(1), SETTINGS).fit(peaky_baseline())
    assert w.sustained.high[0] < 200.0 < w.bands.high[0]
    restored = ChannelWatch(np.zeros(1), SETTINGS)
    restored.restore(w.bands, ChannelBands.from_json(w.sustained.to_json()))
    assert [restored.judge(np.array([900.0])).flagged for _ in range(SETTINGS.sustained_windows)][-1]


def test_the_sustained_band_moves_with_the_baseline_when_refitted():
    w = ChannelWatch(np.zeros(1), SETTINGS).fit(peaky_baseline())
    first_high = w.sustained.high[0]
    drifting = peaky_baseline(2000) + np.linspace(0.0, 60.0, 2000)[:, None]
    flagged = 0
    for step, row in enumerate(drifting):
        flagged += w.judge(row).flagged
        if step % 100 == 99:
            assert w.refit()
    assert flagged == 0, "a busy level that rises by 60 over 2000 windows is followed"
    assert w.sustained.high[0] == pytest.approx(first_high + 60.0, abs=10.0)


def test_gauges_that_count_things_are_told_from_the_others_by_their_baseline():
    samples = np.array([[3.0, 0.5, 7.0, 2.0], [4.0, 0.7, 7.0, 3.0], [np.nan, 0.1, 8.0, 4.0]])
    assert counts_things(samples, np.array([True, True, True, False])).tolist() == [True, False, True, False]


def test_a_counter_that_trickles_gets_no_sustained_band():
    sparse = np.zeros((400, 1))
    sparse[::40] = 3.0
    w = ChannelWatch(event_floor(np.array([True]), window_s=3.0, min_events=5.0), SETTINGS).fit(sparse)
    assert np.isnan(w.sustained.width[0])
    assert not any(w.judge(np.array([2.0])).flagged for _ in range(3 * SETTINGS.sustained_windows))
