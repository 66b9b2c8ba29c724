"""The decision's settings: seconds, checked once, and the one conversion to window counts at a stride."""

import pytest

from stream_jobs.engine.decide.settings import DecisionSettings, DecisionTiming


@pytest.mark.parametrize("stride_s", [0.5, 1.0, 2.0, 300.0])
def test_window_counts_cover_the_durations_at_any_stride(stride_s):
    settings = DecisionSettings()
    timing = DecisionTiming.of(settings, stride_s)
    for name, seconds in (("shared_within", settings.shared_within_s), ("join_within", settings.join_within_s),
                          ("stale_after", settings.stale_after_s), ("regime_hold", settings.regime_hold_s),
                          ("peer_hold", settings.peer_hold_s), ("departures_kept", settings.departures_kept_s)):
        windows = getattr(timing, name)
        assert windows * stride_s >= seconds - 1e-9 and (windows - 1) * stride_s < seconds, name


def test_a_duration_that_is_not_a_finite_number_of_seconds_names_its_key():
    for bad in (float("inf"), float("nan"), -1.0):
        with pytest.raises(ValueError, match="decision.join_within_s"):
            DecisionSettings(join_within_s=bad)
