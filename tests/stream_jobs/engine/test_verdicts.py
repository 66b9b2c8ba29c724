"""What the engine concludes about a window: verdicts compare by their conclusions (a replay equals the live run)
whatever their channel means, context and watch hold; and a window's context defaults to a quiet one."""

from dataclasses import FrozenInstanceError, replace

import numpy as np
import pytest

from stream_jobs.engine.verdicts import WindowContext, WindowVerdict


def a_verdict(**changes) -> WindowVerdict:
    return WindowVerdict(**{"window_id": 7, "start_ns": 0, "end_ns": 3, "frames": 30, "baseline_ready": True,
                            "score": 2.0, "threshold": 1.0, "anomalous": True, "detectors": ("zscore",),
                            "subsystem": "cpu", "claim": "cpu.busy rose", "evidence": ()} | changes)


def test_verdicts_compare_by_their_conclusions_not_by_their_arrays():
    live = a_verdict(channel_means=np.array([1.0, 2.0]), context=WindowContext(retransmits=3.0))
    replayed = a_verdict(channel_means=np.array([5.0, np.nan]))
    assert live == replayed
    assert live != replace(live, anomalous=False) and live != replace(live, detector_scores={"zscore": 2.0})


def test_a_verdict_is_frozen_and_its_context_defaults_to_a_quiet_window():
    verdict = a_verdict()
    with pytest.raises(FrozenInstanceError):
        verdict.score = 0.0
    assert verdict.context is None and verdict.channel_means is None and not verdict.baseline_changed
    assert WindowContext() == WindowContext(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
