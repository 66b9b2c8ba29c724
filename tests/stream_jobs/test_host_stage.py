from producers.synthetic import StepChange, synthetic_catalog, synthetic_frames
from stream_jobs.engine.settings import EngineSettings
from stream_jobs.host_stage import HostStage

T0 = 1_700_000_000_000_000_000


def test_frames_before_their_catalog_are_held_then_processed():
    catalog = synthetic_catalog("h1")
    frames = synthetic_frames(catalog, T0, 100)
    stage = HostStage(EngineSettings(warmup_windows=10))
    early = [stage.on_frame(f) for f in frames[:40]]
    assert all(not o.window_rows for o in early) and stage.counters.held == 40
    released = stage.on_catalog(catalog)
    assert released.window_rows and stage.counters.frames == 40
    later = [stage.on_frame(f) for f in frames[40:]]
    assert sum(len(o.window_rows) for o in later) > 0


def test_each_host_has_its_own_pipeline_and_anomalies_name_their_host():
    stage = HostStage(EngineSettings(warmup_windows=30))
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
    stage = HostStage(EngineSettings(warmup_windows=10))
    small, large = synthetic_catalog("h3", gauges=2), synthetic_catalog("h3", gauges=3)
    stage.on_catalog(small)
    stage.on_catalog(large)
    for frame in synthetic_frames(small, T0, 20) + synthetic_frames(large, T0 + 3 * 10**9, 20):
        stage.on_frame(frame)
    assert stage.counters.catalog_changes == 1
    assert stage.pipelines["h3"][0] == large.version


def test_channels_both_catalogs_have_stay_watched_while_the_new_baseline_is_learned():
    stage = HostStage(EngineSettings(warmup_windows=30))
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
