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


@pytest.mark.parametrize("changes, message", [({"warmup_windows": 9}, "at least 10 baseline windows are needed"),
                                              ({"mode": "vote"}, "mode is 'vote'; expected one of"),
                                              ({"selection_threshold": 1.0}, "expected between 0 and 1, or None"),
                                              ({"selection_threshold": 0.0}, "expected between 0 and 1, or None")])
def test_settings_that_cannot_work_are_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        EngineSettings(**changes)


def test_selection_can_be_switched_off_and_every_mode_is_accepted():
    assert EngineSettings(selection_threshold=None).selection_threshold is None
    assert [EngineSettings(mode=mode).mode for mode in MODES] == list(MODES)
