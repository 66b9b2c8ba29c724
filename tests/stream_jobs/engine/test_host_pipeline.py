"""One host's pipeline over synthetic frames: a step is flagged and attributed to its channel, a clean run stays
quiet, static channels take no part, a replay equals the live run, a recording judged at once equals it frame by
frame, hosts refit at their own phase, a window's claim tells of a channel of the subsystem it is named after, memory
work moving with a fork storm names CPU while held memory names memory, a pruned channel that only fails to follow
its representative's fault is not told of, the paper's mode judges every channel with the paper's trio and keeps
its fit, and a broken correlation counts as evidence of the channels that broke it."""

import numpy as np

from producers.synthetic import StepChange, synthetic_catalog, synthetic_frames
from stream_jobs.engine.channels import ChannelTable
from stream_jobs.engine.host_pipeline import EngineSettings, HostPipeline
from stream_jobs.engine.settings import refit_phase
from stream_jobs.engine.windows import Window

T0 = 1_700_000_000_000_000_000


def run(frames, catalog, settings=EngineSettings(warmup_s=60)):
    table = ChannelTable(catalog.names, catalog.kinds, tuple(c.subsystem for c in catalog.channels))
    pipeline = HostPipeline(table, settings)
    verdicts = []
    for frame in frames:
        verdicts += pipeline.push(frame.timestamp_ns, np.asarray(frame.values))
    return verdicts


def test_step_change_is_flagged_and_attributed_to_its_channel():
    catalog = synthetic_catalog("h")
    frames = synthetic_frames(catalog, T0, 1500, seed=1, steps=(StepChange("cpu.busy.cpu3", 100.0, 25.0),))
    verdicts = run(frames, catalog)
    after = [v for v in verdicts if v.start_ns >= T0 + 100 * 10**9]
    flagged_after = [v for v in after if v.anomalous]
    assert len(flagged_after) >= 0.9 * len(after)
    assert all(v.evidence[0].channel == "cpu.busy.cpu3" and v.subsystem == "cpu" for v in flagged_after)
    assert "cpu.busy.cpu3" in flagged_after[0].claim and "above" in flagged_after[0].claim


def test_clean_run_raises_almost_nothing():
    catalog = synthetic_catalog("h")
    verdicts = run(synthetic_frames(catalog, T0, 3000, seed=2), catalog)
    scored = [v for v in verdicts if v.baseline_ready]
    assert len(scored) > 200
    assert sum(v.anomalous for v in scored) <= 0.02 * len(scored)


def test_static_channels_take_no_part_in_scoring():
    catalog = synthetic_catalog("h")
    frames = synthetic_frames(catalog, T0, 1200, seed=3, steps=(StepChange("mem.MemTotal", 90.0, 1e9),))
    assert not any(v.anomalous and v.evidence[0].channel == "mem.MemTotal" for v in run(frames, catalog))


def test_replay_equals_live_for_the_same_frames():
    catalog = synthetic_catalog("h")
    frames = synthetic_frames(catalog, T0, 900, seed=4, steps=(StepChange("cpu.busy.cpu1", 70.0, 10.0),))
    assert run(frames, catalog) == run(frames, catalog)


def test_frames_pushed_at_once_are_judged_as_frame_by_frame():
    catalog = synthetic_catalog("h")
    frames = synthetic_frames(catalog, T0, 1200, seed=5, steps=(StepChange("cpu.busy.cpu2", 100.0, 25.0),))
    timestamps = np.array([frame.timestamp_ns for frame in frames], dtype=np.int64)
    values = np.array([frame.values for frame in frames], dtype=np.float64)
    table = ChannelTable(catalog.names, catalog.kinds, tuple(c.subsystem for c in catalog.channels))
    for settings in (EngineSettings(warmup_s=60), EngineSettings(warmup_s=60, mode="paper")):
        one_by_one = run(frames, catalog, settings)
        at_once = HostPipeline(table, settings).push_frames(timestamps, values)
        assert at_once == one_by_one
        assert sum(v.anomalous for v in at_once) >= 10 and sum(v.baseline_ready for v in at_once) >= 50


def refit_windows(catalog, frames, phase):
    """Window ids at which a pipeline with this refit phase replaced its baseline (warm-up excluded)."""
    table = ChannelTable(catalog.names, catalog.kinds, tuple(c.subsystem for c in catalog.channels))
    pipeline = HostPipeline(table, EngineSettings(warmup_s=30, refit_every_s=20, baseline_every_s=1), phase)
    verdicts = [v for frame in frames for v in pipeline.push(frame.timestamp_ns, np.asarray(frame.values))]
    return [v.window_id for v in verdicts if v.baseline_changed][1:]


def test_hosts_that_start_together_refit_at_their_own_phase():
    catalog = synthetic_catalog("h")
    frames = list(synthetic_frames(catalog, T0, 900, seed=4))
    in_step, shifted = refit_windows(catalog, frames, 0), refit_windows(catalog, frames, 7)
    assert len(in_step) >= 2 and len(shifted) >= 2
    assert set(in_step).isdisjoint(shifted)
    assert {b - a for a, b in zip(in_step, in_step[1:])} == {20} == {b - a for a, b in zip(shifted, shifted[1:])}
    assert refit_windows(catalog, frames, 7) == shifted


def test_refit_phase_is_stable_and_spreads_hosts():
    phases = {refit_phase(f"node-{i}", 300) for i in range(150)}
    assert refit_phase("node-1", 300) == refit_phase("node-1", 300)
    assert all(0 <= phase < 300 for phase in phases) and len(phases) > 100


def test_a_window_claim_tells_of_a_channel_of_the_subsystem_the_window_is_named_after():
    cores = tuple(f"cpu.busy.cpu{i}" for i in range(8))
    table = ChannelTable((*cores, "mem.used"), ("gauge",) * 9, ("cpu",) * 8 + ("memory",))
    pipeline = HostPipeline(table, EngineSettings(warmup_s=60))
    rng = np.random.default_rng(5)
    verdicts = []
    for s in np.arange(0.0, 260.0, 0.1):
        busy = 40 + rng.normal(0, 2, 8) + (25 if s >= 200 else 0)
        used = 4e9 + rng.normal(0, 1e6) + (3e9 if s >= 200 else 0)
        verdicts += pipeline.push(T0 + int(s * 1e9), np.asarray([*busy, used]))
    flagged = [v for v in verdicts if v.anomalous and v.start_ns >= T0 + 200 * 10**9]
    assert flagged and {v.subsystem for v in flagged} == {"memory"}, "a state far further out than CPU time leads it"
    assert all(v.claim.startswith("mem.used ") for v in flagged), [v.claim for v in flagged][:3]
    assert any(e.channel.startswith("cpu.busy.") for v in flagged for e in v.evidence), "the CPU step is evidence too"


def stepped_run(table: ChannelTable, values_at, seconds: float = 260.0, seed: int = 6) -> list:
    pipeline = HostPipeline(table, EngineSettings(warmup_s=60))
    rng = np.random.default_rng(seed)
    verdicts = []
    for s in np.arange(0.0, seconds, 0.1):
        verdicts += pipeline.push(T0 + int(s * 1e9), np.asarray(values_at(s, rng), dtype=np.float64))
    return [v for v in verdicts if v.anomalous and v.start_ns >= T0 + 200 * 10**9]


def test_memory_work_that_moves_with_a_fork_storm_names_cpu_and_held_memory_names_memory():
    names = ("cpu.forks", "cpu.busy.cpu0", "vm.pgreuse", "vm.pgfault", "mem.used")
    table = ChannelTable(names, ("counter", "gauge", "counter", "counter", "gauge"),
                         ("cpu", "cpu", "memory", "memory", "memory"))
    totals = np.zeros(4)

    def storm(s, rng):
        rates = np.array([5.0, 0.0, 0.0, 500.0]) + (np.array([1000.0, 0.0, 15000.0, 40000.0]) if s >= 200 else 0)
        totals[:] += rng.poisson(rates * 0.1)
        return [totals[0], 30 + rng.normal(0, 2) + (40 if s >= 200 else 0), totals[2], totals[3], 4e9]

    forks = stepped_run(table, storm)
    assert forks and {v.subsystem for v in forks} == {"cpu"}, {v.subsystem for v in forks}
    assert all(v.claim.startswith("cpu.") for v in forks), [v.claim for v in forks][:3]
    totals[:] = 0

    def allocation(s, rng):
        rates = np.array([5.0, 0.0, 0.0, 500.0]) + (np.array([0.0, 0.0, 0.0, 40000.0]) if s >= 200 else 0)
        totals[:] += rng.poisson(rates * 0.1)
        return [totals[0], 30 + rng.normal(0, 2), totals[2], totals[3], 4e9 + rng.normal(0, 1e6) + (2e9 if s >= 200 else 0)]

    held = stepped_run(table, allocation)
    assert held and {v.subsystem for v in held} == {"memory"}, {v.subsystem for v in held}
    assert all(v.claim.startswith("mem.used") for v in held), [v.claim for v in held][:3]


def test_a_pruned_channel_that_does_not_follow_its_representatives_fault_is_not_told_of():
    names = ("cpu.busy.cpu0", "cpu.context_switches", "mem.used")
    table = ChannelTable(names, ("gauge", "gauge", "gauge"), ("cpu", "cpu", "memory"))

    def burner(s, rng):
        load = 20 + rng.normal(0, 3)
        busy, switches = load + rng.normal(0, 0.3), 50 * load + rng.normal(0, 15)
        return [busy + (70 if s >= 200 else 0), switches, 4e9 + rng.normal(0, 1e6)]

    flagged = stepped_run(table, burner)
    features = {(e.channel, e.feature) for v in flagged for e in v.evidence}
    assert flagged and ("cpu.busy.cpu0", "mean") in features, features
    assert not any(feature.startswith("residual") for _, feature in features), features
    assert all(v.claim.startswith("cpu.busy.cpu0") for v in flagged), [v.claim for v in flagged][:3]


def sectors_run(sectors_per_s: float, seconds: float = 200.0) -> list:
    """An idle host's CPU gauges and a disk's sectors discarded, flat at 0 until 150 s, then at `sectors_per_s`."""
    from schemas.agent_records import Catalog, Channel, Frame

    channels = [Channel(f"cpu.busy.cpu{i}", "cpu", "gauge", "percent", f"cpu{i}") for i in range(4)]
    channels.append(Channel("disk.sectors_discarded.vda", "storage", "counter", "sectors", "vda"))
    catalog = Catalog("h1", "c1", tuple(channels), 0.1)
    rng, sectors, frames = np.random.default_rng(9), 0.0, []
    for tick in range(int(seconds * 10)):
        sectors += sectors_per_s * 0.1 if tick >= 1500 else 0.0
        values = np.append(rng.normal(5.0, 1.0, 4), sectors)
        frames.append(Frame("h1", "c1", T0 + tick * 10**8, tick, catalog.version, values))
    pipeline, verdicts = HostPipeline(ChannelTable.of_catalog(catalog), EngineSettings(warmup_s=60)), []
    for frame in frames:
        verdicts += pipeline.push(frame.timestamp_ns, np.asarray(frame.values))
    return verdicts


def test_a_disk_s_sectors_are_bytes_judged_against_the_traffic_floor():
    """16 KiB/s of discards on an idle disk is nothing an operator acts on; 20 MiB/s is a change."""
    flagged = lambda verdicts: [v for v in verdicts if v.anomalous and v.start_ns >= T0 + 150 * 10**9]
    assert flagged(sectors_run(32.0)) == []
    assert flagged(sectors_run(40960.0))


def test_the_papers_mode_judges_every_channel_with_the_papers_trio_and_keeps_its_fit():
    """Of two channels that move together correlation pruning keeps one; the paper's trio (§4.3) judges both, as the
    table is the diagnostic space §4.1 chose, and is not fitted again while it judges."""
    rng = np.random.default_rng(6)
    shared = rng.normal(size=3000)
    values = np.column_stack([shared, shared + 0.1 * rng.normal(size=3000), rng.normal(size=3000)])
    table = ChannelTable(("cpu.a", "cpu.b", "net.c"), ("gauge",) * 3, ("cpu", "cpu", "network"))

    def judged(mode):
        pipeline = HostPipeline(table, EngineSettings(warmup_s=60, mode=mode, refit_every_s=20, baseline_every_s=1,
                                                      trailing_s=None))
        first = None
        for step, row in enumerate(values):
            pipeline.push(T0 + step * 10**8, row)
            if first is None and pipeline.baseline_ready:
                first = [threshold.threshold for threshold in pipeline.ensemble.thresholds]
        return pipeline, first == [threshold.threshold for threshold in pipeline.ensemble.thresholds]

    (calibrated, calibrated_kept_fit), (paper, paper_kept_fit) = judged("calibrated"), judged("paper")
    assert calibrated.kept[:2].sum() == 1 and calibrated.kept[2] and not calibrated_kept_fit
    assert paper.kept.all() and paper.selection is None and paper_kept_fit
    assert not paper.ensemble.detectors[1].minor_components


def test_a_broken_correlation_counts_as_evidence_of_the_channels_that_broke_it():
    table = ChannelTable(("cpu.busy.cpu0", "cpu.busy.cpu1", "mem.used"), ("gauge",) * 3, ("cpu", "cpu", "memory"))
    pipeline = HostPipeline(table, EngineSettings(warmup_s=120, selection_threshold=None))
    rng = np.random.default_rng(3)
    timestamps, rows = [], []
    for s in np.arange(0.0, 200.0, 0.1):
        common = 50 + 20 * np.sin(2 * np.pi * s / 37.0)
        other = 100 - common if s >= 150 else common  # the second core stops following the first, within its range
        timestamps.append(T0 + int(round(s * 1e9)))
        rows.append([common + rng.normal(0, 0.5), other + rng.normal(0, 0.5), 4e9 + rng.normal(0, 1e6)])
        pipeline.push(timestamps[-1], np.asarray(rows[-1]))
    last = Window(0, timestamps[-31], timestamps[-1], np.array(timestamps[-31:]), np.array(rows[-31:]))
    scored = pipeline._scored([pipeline.measure(last)])[0]
    alone, with_correlations = pipeline._feature_evidence(scored.z), pipeline._feature_evidence(scored.z, scored.features)
    assert np.all(with_correlations >= alone)
    assert with_correlations[:2].min() > 3 * max(alone[:2].max(), 1.0) and with_correlations[2] < 5
