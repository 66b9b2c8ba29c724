"""The engine's settings: valid defaults, frozen, and settings that cannot work refused with what is expected."""

from dataclasses import FrozenInstanceError

import pytest

from stream_jobs.engine.ensemble import MODES
from stream_jobs.engine.settings import EngineSettings


def test_the_defaults_are_valid_and_frozen():
    settings = EngineSettings()
    assert settings.warmup_windows >= 10 and settings.mode in MODES
    assert 0 < settings.selection_threshold < 1
    with pytest.raises(FrozenInstanceError):
        settings.seed = 1


@pytest.mark.parametrize("changes, message", [({"warmup_s": 0.0}, "warmup_s is 0; expected seconds above 0"),
                                              ({"mode": "vote"}, "mode is 'vote'; expected one of"),
                                              ({"selection_threshold": 1.0}, "expected between 0 and 1, or None"),
                                              ({"selection_threshold": 0.0}, "expected between 0 and 1, or None"),
                                              ({"trailing_s": 0.0}, "trailing_s is 0.0; expected seconds above 0")])
def test_settings_that_cannot_work_are_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        EngineSettings(**changes)


def test_selection_can_be_switched_off_and_every_mode_is_accepted():
    assert EngineSettings(selection_threshold=None).selection_threshold is None
    assert [EngineSettings(mode=mode).mode for mode in MODES] == list(MODES)


@pytest.mark.parametrize("changes", [{}, {"warmup_s": 10.0}, {"stride_s": 0.5}, {"baseline_every_s": 3.0}])
def test_a_host_s_rolling_baseline_is_full_exactly_when_the_settings_say(changes):
    import numpy as np

    from producers.synthetic import synthetic_catalog, synthetic_frames
    from stream_jobs.engine.channels import ChannelTable
    from stream_jobs.engine.host_pipeline import HostPipeline

    settings = EngineSettings(**changes)
    catalog = synthetic_catalog("h1")
    pipeline = HostPipeline(ChannelTable(catalog.names, catalog.kinds, tuple(c.subsystem for c in catalog.channels)),
                            settings)
    full_s, held = settings.rolling_baseline_full_s, {}
    for frame in synthetic_frames(catalog, 0, int((full_s + 5) / catalog.interval_s), seed=3):
        pipeline.push(frame.timestamp_ns, np.asarray(frame.values))
        held[round(frame.timestamp_ns / 1e9, 1)] = len(pipeline._recent)
    assert held[round(full_s - 0.2, 1)] == settings.baseline_capacity - 1
    assert held[round(full_s + 0.2, 1)] == settings.baseline_capacity


@pytest.mark.parametrize("changes", [{"warmup_s": 10.0}, {"warmup_s": 6.0, "stride_s": 0.5}])
def test_all_a_host_keeps_is_full_exactly_when_the_settings_say(changes):
    import numpy as np

    from producers.synthetic import synthetic_catalog, synthetic_frames
    from stream_jobs.engine.channel_watch import WatchSettings
    from stream_jobs.engine.channels import ChannelTable
    from stream_jobs.engine.host_pipeline import HostPipeline

    settings = EngineSettings(**changes, watch=WatchSettings(history_every_s=1.0, history_span_s=60.0))
    catalog = synthetic_catalog("h1", gauges=8, counters=6)
    pipeline = HostPipeline(ChannelTable(catalog.names, catalog.kinds, tuple(c.subsystem for c in catalog.channels)),
                            settings)
    full_s, held = settings.state_full_s, {}
    assert full_s > settings.rolling_baseline_full_s
    for frame in synthetic_frames(catalog, 0, int((full_s + 5) / catalog.interval_s), seed=3):
        pipeline.push(frame.timestamp_ns, np.asarray(frame.values))
        held[round(frame.timestamp_ns / 1e9, 1)] = len(pipeline.watch.kept._rows) if pipeline.baseline_ready else 0
    capacity = pipeline.watch.kept._rows.maxlen
    assert held[round(full_s - 0.2, 1)] == capacity - 1
    assert held[round(full_s + 0.2, 1)] == capacity


def test_the_command_line_learns_as_many_windows_as_the_settings_do():
    from reveal.cli import build_parser

    from reveal.cli.options import MIN_WARMUP_WINDOWS as FEWEST_ON_THE_COMMAND_LINE
    from stream_jobs.engine.settings import MIN_WARMUP_WINDOWS

    assert build_parser().parse_args(["run"]).warmup == EngineSettings().warmup_s
    assert FEWEST_ON_THE_COMMAND_LINE == MIN_WARMUP_WINDOWS


@pytest.mark.parametrize("stride_s", [0.5, 1.0, 2.0, 300.0])
def test_the_baseline_s_durations_are_seconds_at_any_stride(stride_s):
    settings = EngineSettings(stride_s=stride_s, warmup_s=max(30.0, 10 * stride_s))
    assert settings.warmup_windows >= 10
    for windows, seconds in ((settings.warmup_windows, settings.warmup_s), (settings.refit_every,
                             settings.refit_every_s), (settings.baseline_stride, settings.baseline_every_s)):
        assert seconds - 1e-9 <= windows * stride_s < max(seconds, 0.0) + stride_s, "the duration, to the next stride"
    assert EngineSettings(stride_s=stride_s, warmup_s=stride_s).warmup_windows == 10, "never fewer than 10 windows"


def test_the_rolling_baseline_is_refitted_at_most_once_a_window_length():
    assert EngineSettings(window_s=3600.0, stride_s=300.0, refit_every_s=300.0).refit_every == 12
    assert EngineSettings(window_s=3.0, stride_s=1.0, refit_every_s=300.0).refit_every == 300
