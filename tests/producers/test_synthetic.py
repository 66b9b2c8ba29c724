"""Synthetic hosts: the catalog's channels, frames that are the same for a seed, counters that grow, step changes and
a run generated in pieces."""

import numpy as np

from producers.synthetic import StepChange, synthetic_catalog, synthetic_frames

START_NS = 10**18


def test_the_catalog_holds_cpu_gauges_network_counters_and_total_memory():
    catalog = synthetic_catalog("h1", gauges=3, counters=2, interval_s=0.5)
    assert catalog.names == ("cpu.busy.cpu0", "cpu.busy.cpu1", "cpu.busy.cpu2", "net.rx_bytes.eth0",
                             "net.rx_bytes.eth1", "mem.MemTotal")
    assert catalog.kinds == ("gauge",) * 3 + ("counter",) * 2 + ("static",)
    assert (catalog.host, catalog.cluster, catalog.interval_s) == ("h1", "synthetic", 0.5)


def test_frames_are_numbered_timed_and_the_same_for_a_seed():
    catalog = synthetic_catalog("h1")
    frames = synthetic_frames(catalog, START_NS, 20, seed=3)
    assert [f.sequence for f in frames] == list(range(20))
    assert [f.timestamp_ns - START_NS for f in frames[:3]] == [0, 100_000_000, 200_000_000]
    assert {(f.host, f.cluster, f.catalog_version) for f in frames} == {("h1", "synthetic", catalog.version)}
    again = synthetic_frames(catalog, START_NS, 20, seed=3)
    assert all(np.array_equal(a.values, b.values) for a, b in zip(frames, again))
    other = synthetic_frames(catalog, START_NS, 20, seed=4)
    assert not np.array_equal(frames[0].values, other[0].values)


def test_gauges_hover_around_40_counters_grow_1_mb_a_second_and_memory_stays_put():
    catalog = synthetic_catalog("h1", gauges=8, counters=4, interval_s=0.1)
    values = np.array([f.values for f in synthetic_frames(catalog, START_NS, 600)])
    kinds = np.asarray(catalog.kinds)
    assert abs(values[:, kinds == "gauge"].mean() - 40.0) < 0.5
    growth = (values[-1, kinds == "counter"] - values[0, kinds == "counter"]) / (599 * 0.1)
    assert np.allclose(growth, 1e6, rtol=0.01)
    assert (values[:, kinds == "static"] == 64e9).all()


def test_a_step_change_lifts_a_gauge_and_the_rate_of_a_counter_from_its_start():
    catalog = synthetic_catalog("h1", interval_s=0.1)
    steps = (StepChange("cpu.busy.cpu0", 2.0, 30.0), StepChange("net.rx_bytes.eth0", 2.0, 5e6))
    plain = np.array([f.values for f in synthetic_frames(catalog, START_NS, 40, seed=1)])
    stepped = np.array([f.values for f in synthetic_frames(catalog, START_NS, 40, seed=1, steps=steps)])
    lift = stepped - plain
    gauge, counter = catalog.names.index("cpu.busy.cpu0"), catalog.names.index("net.rx_bytes.eth0")
    assert (lift[:20, gauge] == 0).all() and np.allclose(lift[20:, gauge], 30.0)
    assert lift[19, counter] == 0 and np.allclose(lift[20:, counter], 5e5 * np.arange(1, 21))
    others = [i for i in range(len(catalog.names)) if i not in (gauge, counter)]
    assert (lift[:, others] == 0).all()


def test_a_run_generated_in_pieces_continues_the_counters_and_the_numbering():
    catalog = synthetic_catalog("h1", gauges=1, counters=1)
    first = synthetic_frames(catalog, START_NS, 10)
    second = synthetic_frames(catalog, START_NS, 10, first_tick=10)
    assert [f.sequence for f in second] == list(range(10, 20))
    assert second[0].timestamp_ns == START_NS + 10 * 100_000_000
    counter = catalog.names.index("net.rx_bytes.eth0")
    step = second[0].values[counter] - first[-1].values[counter]
    assert abs(step - 1e5) < 1e5  # one tick's growth, give or take the noise
