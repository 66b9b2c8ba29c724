"""The host stage: frames held until their catalog, one pipeline per host, sequence gaps counted, a new catalog
version relearned while shared channels stay watched, a saved baseline restored, a stage resumed from the frame its
predecessor still needed storing what an uninterrupted one does; and under hostile streams (clocks that jump back and
forward, repeated and missing sequence numbers, NaN and negative counter values, duplicate hosts in two clusters, a
catalog that changes mid-stream) nothing crashes, every window verdict is well formed, and every alert belongs to a
known host."""

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from producers.synthetic import StepChange, synthetic_catalog, synthetic_frames
from schemas.records import Frame
from sinks.rows import alert_row, anomaly_row
from stream_jobs.cluster_stage import ClusterStage
from stream_jobs.engine.channel_watch import WatchTiming
from stream_jobs.engine.settings import EngineSettings
from stream_jobs.host_stage import HostStage

T0 = 1_700_000_000_000_000_000


def test_frames_before_their_catalog_are_held_then_processed():
    catalog = synthetic_catalog("h1")
    frames = synthetic_frames(catalog, T0, 100)
    stage = HostStage(EngineSettings(warmup_s=10))
    early = [stage.on_frame(f) for f in frames[:40]]
    assert all(not o.window_rows for o in early) and stage.counters.held == 40
    released = stage.on_catalog(catalog)
    assert released.window_rows and stage.counters.frames == 40
    later = [stage.on_frame(f) for f in frames[40:]]
    assert sum(len(o.window_rows) for o in later) > 0


def test_each_host_has_its_own_pipeline_and_anomalies_name_their_host():
    stage = HostStage(EngineSettings(warmup_s=30))
    for host, steps in (("quiet", ()), ("loud", (StepChange("cpu.busy.cpu0", 60.0, 30.0),))):
        catalog = synthetic_catalog(host)
        stage.on_catalog(catalog)
        anomalies = [a for f in synthetic_frames(catalog, T0, 900, seed=5, steps=steps)
                     for a in stage.on_frame(f).anomalies]
        if host == "loud":
            assert anomalies and {a.host for a in anomalies} == {"loud"}
            assert any(e.channel == "cpu.busy.cpu0" for a in anomalies for e in a.evidence)
        else:
            assert len(anomalies) <= 3


def test_sequence_gaps_are_counted():
    catalog = synthetic_catalog("h2")
    frames = synthetic_frames(catalog, T0, 50)
    stage = HostStage()
    stage.on_catalog(catalog)
    for frame in frames[:10] + frames[15:]:
        stage.on_frame(frame)
    assert stage.counters.sequence_gaps == 5


def test_new_catalog_version_restarts_the_baseline():
    stage = HostStage(EngineSettings(warmup_s=10))
    small, large = synthetic_catalog("h3", gauges=2), synthetic_catalog("h3", gauges=3)
    stage.on_catalog(small)
    stage.on_catalog(large)
    for frame in synthetic_frames(small, T0, 20) + synthetic_frames(large, T0 + 3 * 10**9, 20):
        stage.on_frame(frame)
    assert stage.counters.catalog_changes == 1
    assert stage.pipelines["h3"][0] == large.version


def test_channels_both_catalogs_have_stay_watched_while_the_new_baseline_is_learned():
    stage = HostStage(EngineSettings(warmup_s=30))
    first, second = synthetic_catalog("cat-host", gauges=8), synthetic_catalog("cat-host", gauges=9)
    assert first.version != second.version
    stage.on_catalog(first)
    stage.on_catalog(second)
    before = synthetic_frames(first, T0, 900, seed=2)
    after = synthetic_frames(second, T0, 600, seed=3, first_tick=900, steps=(StepChange("cpu.busy.cpu1", 100.0, 30.0),))
    for frame in before:
        stage.on_frame(frame)
    verdicts = [v for frame in after for v in stage.on_frame(frame).verdicts]
    learning = [v for v in verdicts if not v.baseline_ready]
    assert stage.counters.catalog_changes == 1 and len(learning) >= 25
    flagged = [v for v in learning if v.anomalous]
    assert flagged, "the step on a channel of both catalogs is found before the new baseline is ready"
    assert all(v.evidence[0].channel == "cpu.busy.cpu1" for v in flagged)
    assert not any(v.anomalous for v in learning if v.end_ns < T0 + 100 * 10**9)


def test_host_stage_restores_a_saved_baseline_instead_of_learning_again():
    catalog = synthetic_catalog("restart-host")
    frames = synthetic_frames(catalog, T0, 900, seed=7, steps=(StepChange("cpu.busy.cpu1", 70.0, 25.0),))
    first = HostStage(EngineSettings(warmup_s=30))
    first.on_catalog(catalog)
    saved = []
    for frame in frames[:450]:
        saved += first.on_frame(frame).baseline_rows
    assert saved, "the learned baseline is handed out for storage"
    state = json.loads(saved[-1][4])
    second = HostStage(EngineSettings(warmup_s=30), baseline_loader=lambda host, version: state)
    second.on_catalog(catalog)
    verdicts = [v for frame in frames[450:] for v in second.on_frame(frame).verdicts]
    assert second.counters.baselines_restored == 1
    assert all(v.baseline_ready for v in verdicts), "a restored worker judges from its first window"
    assert any(v.anomalous for v in verdicts)


# A stage started again from the frame its predecessor still needed (what a restarted worker re-consumes).

SETTINGS = EngineSettings(warmup_s=30)
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
    fixed = EngineSettings(warmup_s=30, trailing_s=None)  # thresholds that do not follow every score
    stage = HostStage(fixed)
    stage.on_catalog(CATALOG)
    verdicts = [v for frame in FRAMES[:700] for v in stage.on_frame(frame).verdicts]
    runs = [v.watch.streak.max() if v.watch is not None else 0 for v in verdicts]
    assert runs[-1] >= WatchTiming.of(fixed.watch, fixed.stride_s).persist, "the step change has been departing for a while"
    first_of_run = verdicts[len(verdicts) - runs[-1]]
    opening = max(f.timestamp_ns for f in FRAMES if f.timestamp_ns < first_of_run.start_ns)
    assert stage.needed_since_ns("resume-host") == opening


def test_a_stage_whose_thresholds_follow_every_score_needs_the_frames_since_its_last_saved_baseline():
    stage = HostStage(SETTINGS)
    stage.on_catalog(CATALOG)
    outputs = [stage.on_frame(frame) for frame in FRAMES[:700]]
    saved = [json.loads(row[4])["through_ns"] for output in outputs for row in output.baseline_rows][-1]
    first_after = min(v.start_ns for output in outputs for v in output.verdicts if v.end_ns > saved)
    opening = max(f.timestamp_ns for f in FRAMES if f.timestamp_ns < first_after)
    assert stage.needed_since_ns("resume-host") == opening


# Hostile streams.

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


T0_NS = 1_790_000_000_000_000_000
CATALOGS = {(host, variant): synthetic_catalog(host, cluster, gauges=3 + variant, counters=2)
            for host, cluster in (("a", "c1"), ("b", "c1"), ("a", "c2")) for variant in (0, 1)}
STEP_NS = st.one_of(st.just(100_000_000), st.just(0), st.integers(-5_000_000_000, 60_000_000_000))
VALUE = st.one_of(st.floats(0, 100), st.just(math.nan), st.floats(-1e12, -1), st.floats(1e15, 1e18))


@st.composite
def streams(draw):
    events, clocks, sequences = [], {}, {}
    for _ in range(draw(st.integers(50, 400))):
        key = draw(st.sampled_from(sorted(CATALOGS)))
        catalog = CATALOGS[key]
        clocks[key] = clocks.get(key, T0_NS) + (draw(STEP_NS) if draw(st.integers(0, 9)) == 0 else 100_000_000)
        sequences[key] = max(0, sequences.get(key, 0) + draw(st.sampled_from([1, 1, 1, 0, -3, 50])))
        noisy = draw(st.integers(0, 19)) == 0
        values = [draw(VALUE) if noisy else 40.0 + i for i in range(len(catalog.channels))]
        events.append(Frame(catalog.host, catalog.cluster, clocks[key], sequences[key], catalog.version,
                            np.asarray(values, dtype=np.float64)))
    return events


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(streams(), st.booleans())
def test_hostile_streams_never_crash_the_stages(frames, catalog_first):
    stage, cluster = HostStage(EngineSettings(warmup_s=10, seed=1)), ClusterStage()
    if catalog_first:
        for catalog in CATALOGS.values():
            stage.on_catalog(catalog)
    outputs = [stage.on_frame(frame) for frame in frames]
    if not catalog_first:
        outputs += [stage.on_catalog(catalog) for catalog in CATALOGS.values()]
    outputs.append(stage.close())
    hosts = {host for host, _ in CATALOGS}
    for output in outputs:
        for summary in output.host_windows:
            cluster.on_host_window(summary)
        for verdict in output.verdicts:
            assert verdict.end_ns > verdict.start_ns
            assert not math.isinf(verdict.score)
        assert all(alert.host in hosts for alert in output.alerts)
    finished = cluster.flush()
    assert all(alert.host in hosts for alert in finished.alerts)


def own_commands_catalog(host: str):
    """The synthetic catalog with the agent's counter of seconds Reveal's own commands ran."""
    from dataclasses import replace as replaced

    from schemas.channels import OWN_COMMANDS_SECONDS
    from schemas.records import Channel

    catalog = synthetic_catalog(host)
    return replaced(catalog, channels=catalog.channels + (Channel(OWN_COMMANDS_SECONDS, "agent", "counter", "s"),))


def incidents_opened(step_s: float, commands: tuple[float, float] | None) -> list[str]:
    """Subsystems of the incidents a CPU step of 25 s from `step_s` opens when Reveal's commands ran over the
    interval `commands` (seconds into the run), or never."""
    from schemas.channels import OWN_COMMANDS_SECONDS
    from stream_jobs.engine.channel_watch import WatchSettings

    catalog = own_commands_catalog("h1")
    settings = EngineSettings(warmup_s=20, watch=WatchSettings(drift_horizon_s=20.0), seed=3)
    stage, cluster = HostStage(settings), ClusterStage()
    stage.on_catalog(catalog)
    column = catalog.names.index(OWN_COMMANDS_SECONDS)
    frames = synthetic_frames(catalog, T0, 1200, seed=4, steps=(StepChange("cpu.busy.cpu0", step_s, 60.0),
                                                                StepChange("cpu.busy.cpu0", step_s + 25.0, -60.0)))
    opened = []
    for frame in frames:
        seconds = (frame.timestamp_ns - T0) / 1e9
        ran = 0.0 if commands is None else min(max(seconds - commands[0], 0.0), commands[1] - commands[0])
        values = np.array(frame.values, dtype=np.float64)
        values[column] = ran
        output = stage.on_frame(Frame(frame.host, frame.cluster, frame.timestamp_ns, frame.sequence,
                                      frame.catalog_version, values))
        for summary in output.host_windows:
            opened += [a.subsystem for a in cluster.on_host_window(summary).alerts if a.state == "open"]
    return opened


def test_load_while_reveal_commands_run_opens_no_incident_and_the_same_load_without_them_does():
    assert incidents_opened(60.0, None) == ["cpu"]
    assert incidents_opened(60.0, (59.0, 86.0)) == []


def test_a_fault_that_outlasts_reveal_commands_is_found_once_they_are_over():
    assert incidents_opened(60.0, (59.0, 66.0)) == ["cpu"]


def test_windows_with_reveal_commands_are_marked_in_their_row():
    from stream_jobs.records import OWN_ACTIVITY_REGIME

    catalog = own_commands_catalog("h1")
    stage = HostStage(EngineSettings(warmup_s=10))
    stage.on_catalog(catalog)
    column = catalog.names.index("agent.reveal_commands_s")
    windows = []
    for frame in synthetic_frames(catalog, T0, 400):
        values = np.array(frame.values, dtype=np.float64)
        values[column] = 1.0 if frame.sequence >= 300 else 0.0
        for row in stage.on_frame(Frame(frame.host, frame.cluster, frame.timestamp_ns, frame.sequence,
                                        frame.catalog_version, values)).window_rows:
            windows.append(((row[3] - T0) / 1e9, (row[4] - T0) / 1e9, row[-1] == OWN_ACTIVITY_REGIME))
    from stream_jobs.engine.own_footprint import READING_SPAN_S

    marked = [(start, end) for start, end, own in windows if own]
    ran_at_s = 30.0
    assert marked and all(end >= ran_at_s - READING_SPAN_S and start <= ran_at_s + READING_SPAN_S
                          for start, end in marked)
    assert all(own for start, end, own in windows if start < ran_at_s < end)


def test_a_short_baseline_says_how_sure_it_is_and_a_full_one_says_nothing():
    from stream_jobs.engine.channel_watch import WatchSettings
    from stream_jobs.host_stage import how_sure

    catalog = synthetic_catalog("h1")
    words = {}
    for horizon in (600.0, 20.0):
        stage = HostStage(EngineSettings(warmup_s=20, watch=WatchSettings(drift_horizon_s=horizon)))
        stage.on_catalog(catalog)
        for frame in synthetic_frames(catalog, T0, 300):
            stage.on_frame(frame)
        words[horizon] = how_sure(stage.pipelines["h1"][1])
    assert words[20.0] == ""
    assert words[600.0].startswith("learned ") and "times what its noise allows until it has been watched 10 min" \
        in words[600.0]
