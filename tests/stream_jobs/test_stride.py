"""Durations are seconds at any stride: the same frames judged every 0.5 s, 1 s and 2 s, through the host and cluster
stages, open and close the same incidents within the coarser stride of each other (and the hold a weak finding
waits, which it waits in whole windows)."""

import os
from dataclasses import dataclass

from hypothesis import given, settings, strategies as st

from producers.synthetic import StepChange, synthetic_catalog, synthetic_frames
from stream_jobs.cluster_stage import ClusterStage
from stream_jobs.engine.settings import EngineSettings
from stream_jobs.host_stage import HostStage

T0 = 1_700_000_000_000_000_000
NS = 1e9
RUN_S, WARMUP_S = 150.0, 40.0
STRIDES = (0.5, 1.0, 2.0)


@dataclass(frozen=True)
class Told:
    """An alert event of a host's own findings, and when it was told (the end of the window that raised it)."""

    host: str
    state: str
    told_s: float


def judged(frames_by_host, stride_s: float) -> list[Told]:
    """Every event of the hosts' own findings, judging the frames at `stride_s`."""
    engine = EngineSettings(stride_s=stride_s, warmup_s=WARMUP_S)
    host_stage, cluster_stage, told = HostStage(engine), ClusterStage(engine), []
    for catalog, _ in frames_by_host:
        host_stage.on_catalog(catalog)
    for step in range(len(frames_by_host[0][1])):
        for _, frames in frames_by_host:
            for summary in host_stage.on_frame(frames[step]).host_windows:
                at = (summary.window_end_ns - T0) / NS
                told += [Told(a.host, a.state, at) for a in cluster_stage.on_host_window(summary).alerts
                         if a.kind == "anomaly"]
    return told


@settings(max_examples=int(os.environ.get("REVEAL_STRIDE_EXAMPLES", "4")), deadline=None)
@given(start_s=st.floats(60.0, 80.0), duration_s=st.floats(8.0, 25.0), offset=st.floats(40.0, 80.0),
       channel=st.integers(0, 7), seed=st.integers(0, 2**16))
def test_incidents_open_and_close_within_a_stride_whatever_the_stride(start_s, duration_s, offset, channel, seed):
    frames_by_host = []
    for index in range(3):
        catalog = synthetic_catalog(f"h{index}", cluster="train")
        name = f"cpu.busy.cpu{channel}"
        fault = (StepChange(name, start_s, offset), StepChange(name, start_s + duration_s, -offset)) \
            if index == 1 else ()
        frames_by_host.append((catalog, synthetic_frames(catalog, T0, round(RUN_S / catalog.interval_s), seed + index,
                                                         fault)))
    by_stride = {stride: judged(frames_by_host, stride) for stride in STRIDES}
    for stride, told in by_stride.items():
        assert [(t.host, t.state) for t in told] == [("h1", "open"), ("h1", "closed")], (stride, told)
        opened, closed = told
        assert start_s < opened.told_s <= start_s + 10, (stride, told)
        settle = EngineSettings().decision.close_after_s
        assert closed.told_s - (start_s + duration_s) <= settle + 10, (stride, told)
    # a window ends on its stride's grid, and a weak finding holds whole windows: a stride apart, and its hold
    within = max(STRIDES) + EngineSettings().decision.weak_hold_s
    for moment in (0, 1):
        times = [by_stride[stride][moment].told_s for stride in STRIDES]
        assert max(times) - min(times) <= within, (moment, by_stride)
