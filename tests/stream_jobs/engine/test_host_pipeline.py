import numpy as np

from producers.synthetic import StepChange, synthetic_catalog, synthetic_frames
from stream_jobs.engine.channels import ChannelTable
from stream_jobs.engine.host_pipeline import EngineSettings, HostPipeline, refit_phase

T0 = 1_700_000_000_000_000_000


def run(frames, catalog, settings=EngineSettings(warmup_windows=60)):
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


def refit_windows(catalog, frames, phase):
    """Window ids at which a pipeline with this refit phase replaced its baseline (warm-up excluded)."""
    table = ChannelTable(catalog.names, catalog.kinds, tuple(c.subsystem for c in catalog.channels))
    pipeline = HostPipeline(table, EngineSettings(warmup_windows=30, refit_every=20, baseline_stride=1), phase)
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


def _bytes_and_segments(seconds: float, bytes_per_segment, extra_bytes, seed: int = 4):
    """Frames of two correlated network gauges: segments sent oscillate, bytes follow them closely."""
    rng = np.random.default_rng(seed)
    t = np.arange(0.0, seconds, 0.1)
    segments = 1000 + 500 * np.sin(2 * np.pi * t / 7.0) + rng.normal(0, 5, len(t))
    sent = bytes_per_segment(t) * segments + extra_bytes(t) + rng.normal(0, 2000, len(t))
    return [(T0 + int(s * 1e9), np.array([b, g])) for s, b, g in zip(t, sent, segments)]


def _judge_pair(bytes_per_segment, extra_bytes):
    table = ChannelTable(("net.sent_bytes", "net.sent_segments"), ("gauge", "gauge"), ("network", "network"))
    pipeline = HostPipeline(table, EngineSettings(warmup_windows=60))
    verdicts = []
    for timestamp, values in _bytes_and_segments(300.0, bytes_per_segment, extra_bytes):
        verdicts += pipeline.push(timestamp, values)
    assert pipeline.residuals.dropped.size == 1, "one gauge is watched as its residual from the other"
    return [v for v in verdicts if v.start_ns >= T0 + 200 * 10**9]


def test_a_small_change_in_the_ratio_of_two_tight_channels_is_not_an_event():
    after = _judge_pair(lambda t: np.where(t >= 200, 1386.0, 1400.0), lambda t: 0.0)
    assert not any(v.anomalous for v in after)


def test_a_channel_that_leaves_its_correlated_channel_by_its_own_spread_is_found():
    after = _judge_pair(lambda t: 1400.0, lambda t: np.where(t >= 200, 5e5, 0.0))
    flagged = [v for v in after if v.anomalous]
    assert len(flagged) >= 0.8 * len(after)
    top = flagged[0].evidence[0]
    assert (top.channel, top.feature) == ("net.sent_segments", "residual"), "the pruned channel's residual names the break"


def _judge_memory_step(step_bytes: float, units=("bytes", "")):
    """A container's resident memory (100 MiB, steady) and a busy CPU channel; memory rises by step_bytes at
    t = 200 s."""
    rng = np.random.default_rng(7)
    t = np.arange(0.0, 300.0, 0.1)
    memory = 100 * 2**20 + rng.normal(0, 2e5, len(t)) + np.where(t >= 200, step_bytes, 0.0)
    busy = 0.6 + 0.2 * np.sin(2 * np.pi * t / 5.0) + rng.normal(0, 0.02, len(t))
    table = ChannelTable(("mem.resident", "cpu.busy"), ("gauge", "gauge"), ("memory", "cpu"), units)
    pipeline = HostPipeline(table, EngineSettings(warmup_windows=60))
    verdicts = []
    for s, m, b in zip(t, memory, busy):
        verdicts += pipeline.push(T0 + int(s * 1e9), np.array([m, b]))
    return [v for v in verdicts if v.start_ns >= T0 + 200 * 10**9]


def test_a_few_mebibytes_more_resident_memory_is_not_an_event_but_a_real_allocation_is():
    assert not any(v.anomalous for v in _judge_memory_step(12 * 2**20))
    assert any(v.anomalous for v in _judge_memory_step(12 * 2**20, units=("", ""))), "without units no floor applies"
    flagged = [v for v in _judge_memory_step(512 * 2**20) if v.anomalous]
    assert flagged and flagged[0].evidence[0].channel == "mem.resident"


def _judge_steps(names, kinds, values_at, seconds=300.0, change_at=200.0, units=()):
    """Verdicts after `change_at` for channels whose per-sample values `values_at(t, rng)` returns (a row each)."""
    rng = np.random.default_rng(11)
    table = ChannelTable(names, kinds, ("network",) * len(names), units)
    pipeline = HostPipeline(table, EngineSettings(warmup_windows=60))
    verdicts = []
    for s in np.arange(0.0, seconds, 0.1):
        verdicts += pipeline.push(T0 + int(s * 1e9), np.asarray(values_at(s, rng), dtype=np.float64))
    return [v for v in verdicts if v.start_ns >= T0 + change_at * 10**9]


def test_a_large_gauge_without_a_unit_that_stops_wobbling_by_kilobytes_is_not_an_event():
    def committed(wobble_after):
        return lambda t, rng: [1.9e9 + (2.2e5 if t < 200 else wobble_after) * np.sin(2 * np.pi * t / 1.3),
                               50 + rng.normal(0, 2)]
    still = _judge_steps(("mem.committed", "cpu.busy"), ("gauge", "gauge"), committed(0.0))
    assert not any(v.anomalous for v in still), "a few hundred kilobytes on 1.9 GB is below its level's floor"
    shaking = [v for v in _judge_steps(("mem.committed", "cpu.busy"), ("gauge", "gauge"), committed(1e8))
               if v.anomalous]
    assert shaking and shaking[0].evidence[0].channel == "mem.committed"


def test_a_tenth_of_a_percent_more_io_stall_is_not_an_event_but_ten_percent_is():
    def stalled(share_after):
        return lambda t, rng: [(0.1 * (rng.random() < 0.05)) + (share_after if t >= 200 else 0.0),
                               50 + rng.normal(0, 2)]
    names, kinds, units = ("psi.io_some_avg10", "cpu.busy"), ("gauge", "gauge"), ("percent", "")
    assert not any(v.anomalous for v in _judge_steps(names, kinds, stalled(0.4), units=units))
    assert any(v.anomalous for v in _judge_steps(names, kinds, stalled(0.4))), "without a unit no floor applies"
    flagged = [v for v in _judge_steps(names, kinds, stalled(10.0), units=units) if v.anomalous]
    assert flagged and flagged[0].evidence[0].channel == "psi.io_some_avg10"


def test_a_count_of_sockets_moving_by_one_is_not_an_event_but_twenty_more_are():
    def sockets(extra_after):
        return lambda t, rng: [40 + (rng.random() < 0.01) + (extra_after(t) if t >= 200 else 0), 1000.0 * t]
    flips = _judge_steps(("sock.tcp_inuse", "net.tx_packets"), ("gauge", "counter"),
                         sockets(lambda t: int(t * 10) % 2))
    assert not any(v.anomalous for v in flips), "a socket count flipping by one is its resolution"
    more = [v for v in _judge_steps(("sock.tcp_inuse", "net.tx_packets"), ("gauge", "counter"), sockets(lambda t: 20))
            if v.anomalous]
    assert more and more[0].evidence[0].channel == "sock.tcp_inuse"


def test_a_handful_of_events_in_one_sample_is_not_an_event_but_a_burst_of_a_hundred_is():
    def counter(burst):
        state = {"total": 0.0}

        def values(t, rng):
            state["total"] += burst if t >= 200 and round(t * 10) % 20 == 0 else 0.0
            return [state["total"], 1000.0 * t]
        return values
    assert not any(v.anomalous for v in _judge_steps(("snmp.TcpExt.Rare", "net.tx_packets"), ("counter", "counter"),
                                                     counter(3.0)))
    flagged = [v for v in _judge_steps(("snmp.TcpExt.Rare", "net.tx_packets"), ("counter", "counter"), counter(100.0))
               if v.anomalous]
    assert flagged and flagged[0].evidence[0].channel == "snmp.TcpExt.Rare"


def test_two_retransmissions_now_and_then_among_a_thousand_segments_a_second_are_not_a_loss_event_but_fifty_are():
    def traffic(every_two_s, per_s):
        state = {"total": 0.0}

        def values(t, rng):
            if t >= 200:
                state["total"] += per_s / 10 + (every_two_s if round(t * 10) % 20 == 0 else 0.0)
            return [state["total"], 1000.0 * t]
        return values
    names, kinds = ("snmp.Tcp.RetransSegs", "snmp.Tcp.OutSegs"), ("counter", "counter")
    assert not any(v.anomalous for v in _judge_steps(names, kinds, traffic(2.0, 0.0)))
    flagged = [v for v in _judge_steps(names, kinds, traffic(0.0, 50.0)) if v.anomalous]
    assert flagged and {e.channel for e in flagged[0].evidence} & {"snmp.Tcp.RetransSegs", "net.retrans_per_segment"}


def test_a_ratio_of_counters_is_judged_by_its_mean_not_by_its_spread_within_a_window():
    names, kinds = ("snmp.Tcp.RetransSegs", "snmp.Tcp.OutSegs"), ("counter", "counter")
    table = ChannelTable(names, kinds, ("network", "network"))
    pipeline = HostPipeline(table, EngineSettings(warmup_windows=60))
    for s in np.arange(0.0, 120.0, 0.1):
        pipeline.push(T0 + int(s * 1e9), np.array([np.floor(0.5 * s), 1000.0 * s]))
    columns = {(pipeline.watched_name(i), pipeline.watched_feature(i)): i
               for i in range(len(pipeline.watch.event_floor))}
    assert np.isfinite(pipeline.watch.event_floor[columns[("net.retrans_per_segment", "mean")]])
    assert np.isinf(pipeline.watch.event_floor[columns[("net.retrans_per_segment", "std")]])
    assert np.isfinite(pipeline.watch.event_floor[columns[("snmp.Tcp.RetransSegs", "std")]])


def _judge_cpu_ticks(extra_cores: float, units=("usec", "usec", "")):
    """A job's CPU time in 10 ms ticks (a light job, about 0.35 % of a core, one tick every few samples), its CFS
    throttled time (never moved) and a busy gauge; after t = 200 s the job uses `extra_cores` more and is throttled
    for 2 % of a core."""
    rng = np.random.default_rng(12)
    t = np.arange(0.0, 300.0, 0.1)
    rate = 0.0035 + np.where(t >= 200, extra_cores, 0.0)
    system = np.cumsum(rng.poisson(rate * 10)) * 10_000.0
    throttled = np.cumsum(np.where(t >= 200, 2_000.0, 0.0))
    busy = 50 + rng.normal(0, 2, len(t))
    table = ChannelTable(("cgroup.cpu_system_usec", "cgroup.cpu_throttled_usec", "cpu.busy"),
                         ("counter", "counter", "gauge"), ("cpu", "cpu", "cpu"), units)
    pipeline = HostPipeline(table, EngineSettings(warmup_windows=60))
    verdicts = []
    for s, a, b, c in zip(t, system, throttled, busy):
        verdicts += pipeline.push(T0 + int(s * 1e9), np.array([a, b, c]))
    return [v for v in verdicts if v.start_ns >= T0 + 200 * 10**9]


def test_a_few_more_cpu_ticks_are_not_an_event_but_a_core_is_and_throttling_that_never_happened_is():
    def flagged_channels(verdicts):
        return {e.channel for v in verdicts if v.anomalous for e in v.evidence}
    few_ticks = _judge_cpu_ticks(0.03)
    assert "cgroup.cpu_system_usec" not in flagged_channels(few_ticks), "3 % of a core is below the core floor"
    assert "cgroup.cpu_throttled_usec" in flagged_channels(few_ticks), "a counter that never moved is an event count"
    assert "cgroup.cpu_system_usec" in flagged_channels(_judge_cpu_ticks(0.03, units=("", "", ""))), \
        "without a unit of time no core floor applies"
    assert "cgroup.cpu_system_usec" in flagged_channels(_judge_cpu_ticks(1.0))


def test_a_window_claim_tells_of_a_channel_of_the_subsystem_the_window_is_named_after():
    cores = tuple(f"cpu.busy.cpu{i}" for i in range(8))
    table = ChannelTable((*cores, "mem.used"), ("gauge",) * 9, ("cpu",) * 8 + ("memory",))
    pipeline = HostPipeline(table, EngineSettings(warmup_windows=60))
    rng = np.random.default_rng(5)
    verdicts = []
    for s in np.arange(0.0, 260.0, 0.1):
        busy = 40 + rng.normal(0, 2, 8) + (25 if s >= 200 else 0)
        used = 4e9 + rng.normal(0, 1e6) + (3e9 if s >= 200 else 0)
        verdicts += pipeline.push(T0 + int(s * 1e9), np.asarray([*busy, used]))
    flagged = [v for v in verdicts if v.anomalous and v.start_ns >= T0 + 200 * 10**9]
    assert flagged and {v.subsystem for v in flagged} == {"cpu"}, {v.subsystem for v in flagged}
    assert "mem.used" in {e.channel for v in flagged for e in v.evidence}, "the memory step is evidence too"
    assert all(v.claim.startswith("cpu.busy.") for v in flagged), [v.claim for v in flagged][:3]


def test_two_one_second_bursts_a_few_seconds_apart_are_not_an_event_but_a_step_that_holds_is_found_as_soon():
    def switches(extra):
        state = {"total": 0.0}

        def values(t, rng):
            state["total"] += rng.poisson(40) + extra(t)
            return [state["total"], 1000.0 * t]
        return values
    bursts = lambda t: 1000 if 210 <= t < 211 or 213 <= t < 214 else 0
    assert not any(v.anomalous for v in _judge_steps(("cpu.context_switches", "net.tx_packets"),
                                                     ("counter", "counter"), switches(bursts)))
    step = [v for v in _judge_steps(("cpu.context_switches", "net.tx_packets"), ("counter", "counter"),
                                    switches(lambda t: 200 if t >= 210 else 0)) if v.anomalous]
    assert step and (step[0].end_ns - T0) / 1e9 - 210 <= 5.0
