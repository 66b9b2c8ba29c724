"""The host and cluster stages under hostile streams: clocks that jump back and forward, repeated and missing
sequence numbers, NaN and negative counter values, duplicate hosts in two clusters, and a catalog that changes
mid-stream. Nothing crashes, every window verdict is well formed, and every alert belongs to a known host."""

import math

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from producers.synthetic import synthetic_catalog
from schemas.records import Frame
from stream_jobs.cluster_stage import ClusterStage
from stream_jobs.engine.settings import EngineSettings
from stream_jobs.host_stage import HostStage

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
    stage, cluster = HostStage(EngineSettings(warmup_windows=10, seed=1)), ClusterStage()
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
