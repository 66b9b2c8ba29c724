"""The columns a host's channel watch judges, and their floors: a few mebibytes, a socket or a handful of events is
no event where a real allocation, twenty sockets or a burst is; counters of time have a core floor; a ratio of
counters is judged by its mean; one second's burst moves no column; columns' means skip what was not read; a signal
ranks by all its columns together."""

import numpy as np

from stream_jobs.engine.channels import ChannelTable
from stream_jobs.engine.channel_watch import WatchSettings, WatchVerdict
from stream_jobs.engine.host_pipeline import EngineSettings, HostPipeline
from stream_jobs.engine.watched_columns import column_means, moves_every_step

T0 = 1_700_000_000_000_000_000


def test_column_means_skip_missing_values_and_a_column_never_read_is_nan():
    means = column_means(np.array([[1.0, np.nan], [3.0, np.nan], [np.nan, np.nan]]))
    assert means[0] == 2.0 and np.isnan(means[1])


def test_a_signal_moves_every_step_when_it_is_nonzero_in_nine_tenths_of_them():
    signals = np.column_stack([np.arange(1.0, 11.0), np.r_[np.zeros(2), np.ones(8)], np.r_[0.0, np.ones(9)]])
    assert moves_every_step(signals).tolist() == [True, False, True]
    assert moves_every_step(np.zeros((0, 3))).tolist() == [False] * 3


def _judge_memory_step(step_bytes: float, units=("bytes", "")):
    """A container's resident memory (100 MiB, steady) and a busy CPU channel; memory rises by step_bytes at
    t = 200 s."""
    rng = np.random.default_rng(7)
    t = np.arange(0.0, 300.0, 0.1)
    memory = 100 * 2**20 + rng.normal(0, 2e5, len(t)) + np.where(t >= 200, step_bytes, 0.0)
    busy = 0.6 + 0.2 * np.sin(2 * np.pi * t / 5.0) + rng.normal(0, 0.02, len(t))
    table = ChannelTable(("mem.resident", "cpu.busy"), ("gauge", "gauge"), ("memory", "cpu"), units)
    pipeline = HostPipeline(table, EngineSettings(warmup_s=60))
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
    pipeline = HostPipeline(table, EngineSettings(warmup_s=60))
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
    names, kinds, units = ("sock.tcp_inuse", "net.tx_packets"), ("gauge", "counter"), ("sockets", "packets")
    flips = _judge_steps(names, kinds, sockets(lambda t: int(t * 10) % 2), units=units)
    assert not any(v.anomalous for v in flips), "a socket count flipping by one is its resolution"
    assert any(v.anomalous for v in _judge_steps(names, kinds, sockets(lambda t: int(t * 10) % 2))), \
        "in a table without units no column is known to count things"
    more = [v for v in _judge_steps(names, kinds, sockets(lambda t: 20), units=units) if v.anomalous]
    assert more and more[0].evidence[0].channel == "sock.tcp_inuse"


def test_a_count_moves_by_its_natural_spread_before_it_counts():
    """Of seventy sockets that never moved in the baseline, four more (or twelve) are within twice a count's √70
    spread; forty are not. Of four connections, two closing is a count's spread too."""
    def sockets(extra):
        return lambda t, rng: [70 + (extra if t >= 200 else 0), 1000.0 * t]
    names, kinds, units = ("sock.sockets_used", "net.tx_packets"), ("gauge", "counter"), ("sockets", "packets")
    assert not any(v.anomalous for v in _judge_steps(names, kinds, sockets(4), units=units))
    assert not any(v.anomalous for v in _judge_steps(names, kinds, sockets(12), units=units))
    assert not any(v.anomalous for v in _judge_steps(("snmp.Tcp.CurrEstab", "net.tx_packets"), kinds,
                                                      lambda t, rng: [4 - (2 if t >= 200 else 0), 1000.0 * t],
                                                      units=("", "packets")))
    more = [v for v in _judge_steps(names, kinds, sockets(40), units=units) if v.anomalous]
    assert more and more[0].evidence[0].channel == "sock.sockets_used"


def test_a_memory_level_moves_by_a_share_of_the_hosts_memory_before_it_counts():
    """On a 64 GiB host, 50 MiB more file huge pages is a rounding of its memory; 2 GiB held is not."""
    def memory(step):
        return lambda t, rng: [64 * 2**30, 14 * 2**20 + (step if t >= 200 else 0), 1000.0 * t]
    names, kinds, units = ("mem.MemTotal", "mem.FileHugePages", "net.tx_packets"), ("static", "gauge", "counter"), \
        ("bytes", "bytes", "packets")
    assert not any(v.anomalous for v in _judge_steps(names, kinds, memory(50 * 2**20), units=units))
    held = [v for v in _judge_steps(names, kinds, memory(2 * 2**30), units=units) if v.anomalous]
    assert held and held[0].evidence[0].channel == "mem.FileHugePages"


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
    pipeline = HostPipeline(table, EngineSettings(warmup_s=60))
    for s in np.arange(0.0, 120.0, 0.1):
        pipeline.push(T0 + int(s * 1e9), np.array([np.floor(0.5 * s), 1000.0 * s]))
    columns = {(pipeline.columns.name(i), pipeline.columns.feature(i)): i
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
    # floors, not a cold start, are under test: the minute of baseline spans the model's whole drift horizon
    pipeline = HostPipeline(table, EngineSettings(warmup_s=60, watch=WatchSettings(drift_horizon_s=60.0)))
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


def test_a_signal_whose_level_and_spread_both_move_outranks_one_whose_level_alone_moves_a_little_more():
    table = ChannelTable(("a", "b", "c"), ("gauge",) * 3, ("cpu", "memory", "disk"))
    columns = HostPipeline(table, EngineSettings(warmup_s=60)).columns
    z = np.array([5.0, 4.0, 0.0, 0.0, 4.0, 0.0])  # means of a, b, c, then their spreads
    watched = WatchVerdict(z, z, np.zeros(6), np.zeros(6, dtype=bool))
    assert columns.ranked(watched)[:2] == ("b", "a")  # √(4² + 4²) ≈ 5.7 against 5
    assert columns.ranked(watched, np.array([0.0, 0.0, 6.0]))[0] == "c"  # a window feature further out leads
