"""A host stage started again from the frame its predecessor still needed (what a restarted worker re-consumes)
stores the same windows, anomalies and alerts as one that never stopped."""

import json

import pytest

from producers.synthetic import StepChange, synthetic_catalog, synthetic_frames
from sinks.rows import alert_row, anomaly_row
from stream_jobs.engine.host_pipeline import EngineSettings
from stream_jobs.host_stage import HostStage

T0 = 1_700_000_000_000_000_000
SETTINGS = EngineSettings(warmup_windows=30)
CATALOG = synthetic_catalog("resume-host")
FRAMES = synthetic_frames(CATALOG, T0, 900, seed=3, steps=(StepChange("cpu.busy.cpu1", 60.0, 30.0),))


class Store:
    """Rows by table key, the last write winning, as ReplacingMergeTree reads with FINAL."""

    def __init__(self):
        self.windows, self.anomalies, self.alerts, self.baseline = {}, {}, {}, None

    def add(self, output) -> None:
        for row in output.window_rows:
            self.windows[(row[0], row[2])] = row
        for anomaly in output.anomalies:
            self.anomalies[(anomaly.host, anomaly.window_id)] = anomaly_row(anomaly)
        for alert in output.alerts:
            self.alerts[(alert.host, alert.start_ns, alert.alert_id, alert.state)] = alert_row(alert)
        for row in output.baseline_rows:
            self.baseline = json.loads(row[4])


def run(stage: HostStage, frames, store: Store) -> None:
    stage.on_catalog(CATALOG)
    for frame in frames:
        store.add(stage.on_frame(frame))


def uninterrupted() -> Store:
    store, stage = Store(), HostStage(SETTINGS)
    run(stage, FRAMES, store)
    store.add(stage.close())
    return store


@pytest.mark.parametrize("killed_after", [150, 330, 640, 700])
def test_stage_resumed_from_what_it_still_needed_stores_what_an_uninterrupted_one_does(killed_after):
    store = Store()
    first = HostStage(SETTINGS)
    run(first, FRAMES[:killed_after], store)
    resume_from = first.needed_since_ns("resume-host")
    second = HostStage(SETTINGS, lambda host, version: store.baseline)
    run(second, [f for f in FRAMES[killed_after - 1::-1] if f.timestamp_ns >= resume_from][::-1]
        + FRAMES[killed_after:], store)
    store.add(second.close())
    expected = uninterrupted()
    assert store.windows.keys() == expected.windows.keys()
    assert store.windows == expected.windows
    assert store.anomalies == expected.anomalies
    assert store.alerts.keys() == expected.alerts.keys()


def test_a_stage_whose_channels_are_departing_needs_the_first_window_of_their_run_again_with_its_opening_frame():
    stage = HostStage(SETTINGS)
    stage.on_catalog(CATALOG)
    verdicts = [v for frame in FRAMES[:700] for v in stage.on_frame(frame).verdicts]
    runs = [v.watch.streak.max() if v.watch is not None else 0 for v in verdicts]
    assert runs[-1] >= SETTINGS.watch.persist_windows, "the step change has been departing for a while"
    first_of_run = verdicts[len(verdicts) - runs[-1]]
    opening = max(f.timestamp_ns for f in FRAMES if f.timestamp_ns < first_of_run.start_ns)
    assert stage.needed_since_ns("resume-host") == opening


@pytest.mark.parametrize("killed_after", [640, 696, 731])
def test_a_clean_host_whose_frames_fall_on_the_stride_resumes_with_the_frame_that_opens_its_first_window(killed_after):
    catalog = synthetic_catalog("clean-host")
    frames = synthetic_frames(catalog, T0, 800, seed=1)
    store, first = Store(), HostStage(SETTINGS)
    first.on_catalog(catalog)
    for frame in frames[:killed_after]:
        store.add(first.on_frame(frame))
    resume_from = first.needed_since_ns("clean-host")
    assert (resume_from - T0) % 10**9 != 0, "the frame before the stride boundary opens the first window resumed"
    second = HostStage(SETTINGS, lambda host, version: store.baseline)
    second.on_catalog(catalog)
    for frame in (f for f in frames if f.timestamp_ns >= resume_from):
        store.add(second.on_frame(frame))
    store.add(second.close())
    expected, reference = Store(), HostStage(SETTINGS)
    reference.on_catalog(catalog)
    for frame in frames:
        expected.add(reference.on_frame(frame))
    expected.add(reference.close())
    assert store.windows == expected.windows
