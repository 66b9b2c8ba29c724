"""The engine bench on a few small synthetic hosts: every stage of a window timed, memory per host and the channel
watch's full history measured, and the total the sum of the stages."""

import pytest

from reveal.bench.engine import bench_engine


def test_every_stage_of_a_window_is_timed_and_memory_per_host_measured():
    said = []
    result = bench_engine(hosts=2, channels=20, repeats=2, progress=said.append)
    assert said == ["warming 2 host pipelines of 20 channels …"]
    assert (result.hosts, result.channels) == (2, 20) and 0 < result.kept_channels <= 20 and result.features > 0
    stages = {"signals_and_derived", "features", "attribution", "channel_watch"}
    assert stages <= set(result.micros) and any(name.startswith("detector_") for name in result.micros)
    assert all(micros > 0 for micros in result.micros.values()) and result.streak_micros > 0
    assert result.total_ms == pytest.approx(sum(result.micros.values()) / 1e3)
    assert result.memory_bytes_per_host > 0 and result.watch_history_bytes > 0
    assert result.watch_history_bytes % 4 == 0, "float32 rows"
