import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from stream_jobs.engine.selection import DEFAULT_PRIORITY, UNRANKED, Selection, priority_ranks, select_channels

GROUPS = {
    "cpu": ["pmu.cycles.cpu0", "cpu.system.cpu0", "cpu.busy_pct.cpu0", "pmu.instructions.cpu0", "irq.total.cpu0"],
    "network": ["net.rx_packets.eth0", "snmp.Tcp.OutSegs", "net.tx_bytes.eth0", "snmp.Ip.InReceives",
                "net.softnet_processed.cpu0"],
    "storage": ["disk.reads_completed.sda", "disk.reads_merged.sda", "disk.ios_in_progress.sda",
                "disk.sectors_read.sda", "disk.weighted_time_in_progress_ms.sda"],
}
INDEPENDENT = {"gpu.temperature.gpu0": "gpu", "mem.Dirty": "memory", "agent.tick_lag_ms": "agent"}


def grouped_signal(samples=600, seed=0):
    """Three groups of five channels with r ≈ 0.9 inside a group, plus three independent channels."""
    rng = np.random.default_rng(seed)
    columns, names, subsystems = [], [], []
    for subsystem, members in GROUPS.items():
        latent = rng.normal(size=samples)
        for name in members:
            columns.append(3.0 * latent + rng.normal(scale=1.0, size=samples) + rng.uniform(0, 100))
            names.append(name)
            subsystems.append(subsystem)
    for name, subsystem in INDEPENDENT.items():
        columns.append(rng.normal(size=samples))
        names.append(name)
        subsystems.append(subsystem)
    return np.column_stack(columns), names, subsystems


def test_one_representative_per_correlated_group_and_independent_channels_stay():
    signal, names, subsystems = grouped_signal()
    within = np.corrcoef(signal[:, :5], rowvar=False)[np.triu_indices(5, 1)]
    assert 0.85 < within.min() and within.max() < 0.95
    selection = select_channels(signal, names, subsystems)
    assert len(selection.kept) == 6
    assert set(selection.kept) >= set(INDEPENDENT)
    assert {"cpu.busy_pct.cpu0", "net.tx_bytes.eth0", "disk.sectors_read.sda"} <= set(selection.kept)
    assert selection.represented_by["pmu.cycles.cpu0"] == "cpu.busy_pct.cpu0"
    assert selection.represented_by["disk.reads_merged.sda"] == "disk.sectors_read.sda"
    assert selection.savings() == pytest.approx(12 / 18)


def test_kept_channels_are_in_catalog_order_and_every_representative_is_kept():
    signal, names, subsystems = grouped_signal(seed=1)
    selection = select_channels(signal, names, subsystems)
    assert list(selection.kept) == [n for n in names if n in selection.kept]
    assert set(selection.represented_by.values()) <= set(selection.kept)
    assert set(selection.kept) | set(selection.represented_by) == set(names)


def test_without_a_priority_the_pair_member_with_higher_correlation_variance_is_kept():
    rng = np.random.default_rng(5)
    common, side = rng.normal(size=(2, 500))
    first = common + 0.3 * rng.normal(size=500)
    second = common + 0.3 * rng.normal(size=500) + 0.5 * side
    signal = np.column_stack([second, first, side + 0.5 * rng.normal(size=500)])
    strength = np.abs(np.corrcoef(signal, rowvar=False))
    variance = [np.var(np.delete(strength[i], i)) for i in range(2)]
    assert variance[1] > variance[0], "the later catalog entry must be the one that the tie-break favours"
    names = ["x.second", "x.first", "x.side"]
    selection = select_channels(signal, names, ["cpu"] * 3, priority=())
    assert selection.represented_by == {"x.second": "x.first"}


def test_clusters_never_cross_subsystems():
    rng = np.random.default_rng(2)
    latent = rng.normal(size=400)
    signal = np.column_stack([latent, latent + 0.01 * rng.normal(size=400)])
    selection = select_channels(signal, ["cpu.busy.cpu0", "gpu.power.gpu0"], ["cpu", "gpu"])
    assert selection.kept == ("cpu.busy.cpu0", "gpu.power.gpu0")


def test_constant_and_sparse_channels_are_kept_out_of_pruning():
    signal, names, subsystems = grouped_signal()
    constant = np.full((len(signal), 1), 512.0)
    sparse = np.full((len(signal), 1), np.nan)
    sparse[:2, 0] = [1.0, 2.0]
    signal = np.hstack([signal, constant, sparse])
    selection = select_channels(signal, names + ["mem.HugePages_Total", "gpu.xid_errors.gpu0"],
                                subsystems + ["memory", "gpu"])
    assert selection.constant == ("mem.HugePages_Total",)
    assert {"mem.HugePages_Total", "gpu.xid_errors.gpu0"} <= set(selection.kept)
    assert len(selection.kept) == 8


def test_scattered_missing_samples_do_not_break_the_clustering():
    signal, names, subsystems = grouped_signal()
    holes = np.random.default_rng(3).random(signal.shape) < 0.02
    selection = select_channels(np.where(holes, np.nan, signal), names, subsystems)
    assert len(selection.kept) == 6


def test_union_keeps_what_any_workload_kept():
    first = Selection(("a", "b"), {"c": "a", "d": "b"}, ("b",), 0.5)
    second = Selection(("a", "b", "c"), {"d": "c"}, ("c",), 0.5)
    union = first.union(second)
    assert union.kept == ("a", "b", "c")
    assert union.represented_by == {"d": "b"}
    assert union.constant == ()
    assert Selection.union(first, second) == union
    assert Selection(("a",), {}, ("a",)).union(Selection(("a",), {}, ("a",))).constant == ("a",)


def test_union_of_different_thresholds_is_refused():
    with pytest.raises(ValueError, match="thresholds"):
        Selection(("a",), threshold=0.5).union(Selection(("a",), threshold=0.7))


def test_save_and_load_round_trip(tmp_path):
    signal, names, subsystems = grouped_signal()
    selection = select_channels(signal, names, subsystems)
    path = tmp_path / "selection.json"
    selection.save(path)
    assert Selection.load(path) == selection
    assert Selection.from_json(selection.to_json()) == selection


def test_mask_keeps_unknown_channels_and_drops_represented_ones():
    selection = Selection(("cpu.busy.cpu0",), {"pmu.cycles.cpu0": "cpu.busy.cpu0"})
    mask = selection.mask(["pmu.cycles.cpu0", "cpu.busy.cpu0", "gpu.utilization.gpu7"])
    np.testing.assert_array_equal(mask, [False, True, True])
    assert selection.mask([]).shape == (0,)


def test_priority_table_ranks_utilisation_and_throughput_first():
    ranks = priority_ranks(["cpu.busy_pct.cpu2", "gpu.utilization.gpu0", "mem.MemAvailable", "net.rx_bytes.eth0",
                            "disk.sectors_read.nvme0n1", "pmu.cycles.cpu0", "gpu.memory_utilization.gpu0"])
    assert list(ranks[:5]) == sorted(ranks[:5]) and ranks[5] == UNRANKED and ranks[6] < UNRANKED
    assert priority_ranks(["gpu.utilization.gpu0"], DEFAULT_PRIORITY + ((r"^gpu\.", -1),))[0] == -1


def test_invalid_inputs_are_rejected():
    with pytest.raises(ValueError, match="one name"):
        select_channels(np.zeros((5, 2)), ["a"], ["cpu"])
    with pytest.raises(ValueError, match="unique"):
        select_channels(np.zeros((5, 2)), ["a", "a"], ["cpu", "cpu"])
    with pytest.raises(ValueError, match="threshold"):
        select_channels(np.zeros((5, 1)), ["a"], ["cpu"], threshold=0.0)


def test_inputs_are_not_mutated_and_results_are_deterministic():
    signal, names, subsystems = grouped_signal()
    before = signal.copy()
    assert select_channels(signal, names, subsystems) == select_channels(signal, names, subsystems)
    np.testing.assert_array_equal(signal, before)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 40), st.integers(0, 12), st.floats(0.05, 1.0), st.integers(0, 2**32 - 1))
def test_any_signal_partitions_the_catalog(samples, channels, threshold, seed):
    rng = np.random.default_rng(seed)
    signal = rng.normal(size=(samples, channels)).cumsum(axis=0)
    signal[rng.random(signal.shape) < 0.2] = np.nan
    signal[:, ::3] = 1.0
    names = [f"m.c{i}" for i in range(channels)]
    selection = select_channels(signal, names, [("cpu", "gpu")[i % 2] for i in range(channels)], threshold)
    assert set(selection.kept).isdisjoint(selection.represented_by)
    assert set(selection.kept) | set(selection.represented_by) == set(names)
    assert set(selection.represented_by.values()) <= set(selection.kept)
    assert selection.mask(names).sum() == len(selection.kept)
