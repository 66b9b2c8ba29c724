import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from stream_jobs.engine.derived import DerivedSpec, counter_deltas, derive, derived_specs, signals, step_seconds

STATES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest")
TIMESTAMPS = np.array([0, 100_000_000, 200_000_000])

# Per-step increments of each input; the cumulative series start from arbitrary large values.
CPU0 = {"user": (30, 0), "nice": (0, 0), "system": (10, 0), "idle": (50, 100), "iowait": (10, 0), "irq": (0, 0),
        "softirq": (0, 0), "steal": (0, 0), "guest": (500, 500)}
CPU1 = {"user": (75, 0), "nice": (0, 0), "system": (0, 0), "idle": (25, 0), "iowait": (0, 0), "irq": (0, 0),
        "softirq": (0, 0), "steal": (0, 0), "guest": (0, 0)}
PMU0 = {"cycles": (1000, 0), "instructions": (2500, 0), "branch_misses": (25, 0), "cache_misses": (30, 0),
        "cache_references": (120, 0), "cycle_activity_stalls_l3_miss": (100, 0)}
PMU1 = {"cycles": (400, 800), "instructions": (400, 400), "branch_misses": (4, 0), "cache_misses": (0, 5),
        "cache_references": (0, 10), "cycle_activity_stalls_l3_miss": (40, 400)}


def cumulative(increments, start=1e9):
    return [start, start + increments[0], start + increments[0] + increments[1]]


def catalog() -> dict[str, list[float]]:
    """Two CPUs and the host line, PMU and MSR counters, TCP, memory and one interface: name → three frames."""
    series = {}
    for state in STATES:
        for cpu, increments in (("cpu0", CPU0[state]), ("cpu1", CPU1[state])):
            series[f"cpu.{state}.{cpu}"] = cumulative(increments)
        series[f"cpu.{state}.all"] = cumulative(np.add(CPU0[state], CPU1[state]))
    for cpu, pmu in (("cpu0", PMU0), ("cpu1", PMU1)):
        series.update({f"pmu.{event}.{cpu}": cumulative(pmu[event]) for event in pmu})
    series["cpu.tsc_mhz"] = [2000.0] * 3
    series.update({"cpu.aperf.cpu0": cumulative((150, 0)), "cpu.mperf.cpu0": cumulative((100, 0)),
                   "cpu.aperf.cpu1": cumulative((90, 60)), "cpu.mperf.cpu1": cumulative((100, 40))})
    series.update({"snmp.Tcp.RetransSegs": cumulative((3, 0)), "snmp.Tcp.OutSegs": cumulative((1000, 0)),
                   "mem.MemTotal": [1000.0] * 3, "mem.MemAvailable": [500.0, 250.0, 1000.0],
                   "net.rx_bytes.eth0": cumulative((1000, 0)), "net.tx_bytes.eth0": cumulative((500, 20))})
    return series


def names_and_values(series: dict[str, list[float]]) -> tuple[tuple[str, ...], np.ndarray]:
    return tuple(series), np.array(list(series.values()), dtype=np.float64).T


def derived_by_name(series=None) -> dict[str, np.ndarray]:
    names, values = names_and_values(series or catalog())
    specs = derived_specs(names)
    out = derive(specs, TIMESTAMPS, values)
    return {spec.name: out[:, i] for i, spec in enumerate(specs)}


def test_plain_increases_become_per_second_rates():
    timestamps = np.array([0, 100_000_000, 200_000_000])
    values = np.array([[100.0, 5.0], [110.0, 6.0], [130.0, 7.0]])
    out = signals(timestamps, values, np.array([True, False]))
    np.testing.assert_allclose(out, [[100.0, 6.0], [200.0, 7.0]])


def test_32_bit_wrap_is_unwrapped():
    values = np.array([[2.0**32 - 10], [5.0]])
    assert counter_deltas(values)[0, 0] == 15.0


def test_reset_restarts_from_zero():
    values = np.array([[1_000_000.0], [40.0]])
    assert counter_deltas(values)[0, 0] == 40.0


def test_64_bit_counter_drop_is_a_reset_not_a_wrap():
    values = np.array([[2.0**40], [7.0]])
    assert counter_deltas(values)[0, 0] == 7.0


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=2.0**33, allow_nan=False), min_size=2, max_size=50))
def test_deltas_are_never_negative(series):
    deltas = counter_deltas(np.array(series)[:, None])
    assert (deltas >= 0).all()


def test_inputs_are_not_mutated():
    values = np.array([[5.0], [1.0], [9.0]])
    before = values.copy()
    signals(np.array([0, 10**8, 2 * 10**8]), values, np.array([True]))
    np.testing.assert_array_equal(values, before)


def test_specs_cover_every_metric_in_a_fixed_order():
    names, _ = names_and_values(catalog())
    assert [spec.name for spec in derived_specs(names)] == [
        "cpu.busy_pct.cpu0", "cpu.busy_pct.cpu1", "cpu.busy_pct.all",
        "pmu.ipc.cpu0", "pmu.ipc.cpu1", "pmu.branch_miss_rate.cpu0", "pmu.branch_miss_rate.cpu1",
        "pmu.cache_miss_ratio.cpu0", "pmu.cache_miss_ratio.cpu1", "pmu.l3_stall_ratio.cpu0", "pmu.l3_stall_ratio.cpu1",
        "cpu.busy_mhz.cpu0", "cpu.busy_mhz.cpu1", "net.bytes_per_s.eth0", "net.retrans_per_segment", "mem.used_pct"]


def test_spec_records_its_inputs_and_subsystem():
    names, _ = names_and_values(catalog())
    specs = {spec.name: spec for spec in derived_specs(names)}
    ipc = specs["pmu.ipc.cpu1"]
    assert ipc == DerivedSpec("pmu.ipc.cpu1", "cpu", (names.index("pmu.instructions.cpu1"),
                                                      names.index("pmu.cycles.cpu1")), "delta_ratio")
    assert specs["mem.used_pct"].subsystem == "memory" and specs["net.retrans_per_segment"].subsystem == "network"


def test_busy_percent_is_exact_and_ignores_guest_time():
    derived = derived_by_name()
    np.testing.assert_allclose(derived["cpu.busy_pct.cpu0"], [40.0, 0.0])
    assert derived["cpu.busy_pct.cpu1"][0] == 75.0
    np.testing.assert_allclose(derived["cpu.busy_pct.all"], [57.5, 0.0])


def test_pmu_ratios_are_exact():
    derived = derived_by_name()
    assert derived["pmu.ipc.cpu0"][0] == 2.5 and derived["pmu.ipc.cpu1"].tolist() == [1.0, 0.5]
    assert derived["pmu.branch_miss_rate.cpu0"][0] == 0.01 and derived["pmu.branch_miss_rate.cpu1"][0] == 0.01
    assert derived["pmu.cache_miss_ratio.cpu0"][0] == 0.25 and derived["pmu.cache_miss_ratio.cpu1"][1] == 0.5
    assert derived["pmu.l3_stall_ratio.cpu0"][0] == 0.1 and derived["pmu.l3_stall_ratio.cpu1"].tolist() == [0.1, 0.5]


def test_busy_mhz_tcp_memory_and_network_are_exact():
    derived = derived_by_name()
    assert derived["cpu.busy_mhz.cpu0"][0] == 3000.0
    np.testing.assert_allclose(derived["cpu.busy_mhz.cpu1"], [1800.0, 3000.0])
    assert derived["net.retrans_per_segment"][0] == 0.003
    np.testing.assert_allclose(derived["mem.used_pct"], [75.0, 0.0])
    np.testing.assert_allclose(derived["net.bytes_per_s.eth0"], [15000.0, 200.0])


@pytest.mark.filterwarnings("error")
def test_zero_denominators_give_nan():
    derived = derived_by_name()
    for name in ("cpu.busy_pct.cpu1", "pmu.ipc.cpu0", "pmu.branch_miss_rate.cpu0", "pmu.cache_miss_ratio.cpu0",
                 "pmu.l3_stall_ratio.cpu0", "cpu.busy_mhz.cpu0", "net.retrans_per_segment"):
        assert np.isnan(derived[name][1]), name
    assert np.isnan(derived["pmu.cache_miss_ratio.cpu1"][0])


def test_zero_memory_total_gives_nan():
    series = catalog()
    series["mem.MemTotal"] = [0.0] * 3
    assert np.isnan(derived_by_name(series)["mem.used_pct"]).all()


def test_a_reset_inside_the_window_gives_neither_negative_nor_huge_values():
    series = catalog()
    for state in STATES:  # cpu0 reboots before the last frame: its counters restart near zero
        series[f"cpu.{state}.cpu0"][2] = {"user": 20.0, "idle": 60.0}.get(state, 0.0)
    series["pmu.instructions.cpu0"][2], series["pmu.cycles.cpu0"][2] = 300.0, 200.0
    derived = derived_by_name(series)
    assert derived["cpu.busy_pct.cpu0"][1] == 25.0
    assert derived["pmu.ipc.cpu0"][1] == 1.5


def test_a_32_bit_wrap_inside_the_window_is_unwrapped():
    series = catalog()
    series["pmu.cache_misses.cpu1"] = [2.0**32 - 20, 2.0**32 - 10, 10.0]
    series["pmu.cache_references.cpu1"] = [0.0, 40.0, 80.0]
    np.testing.assert_allclose(derived_by_name(series)["pmu.cache_miss_ratio.cpu1"], [0.25, 0.5])


def test_specs_need_every_input():
    series = catalog()
    for name in ("cpu.steal.cpu1", "pmu.instructions.cpu1", "cpu.tsc_mhz", "snmp.Tcp.OutSegs", "net.tx_bytes.eth0"):
        del series[name]
    produced = {spec.name for spec in derived_specs(tuple(series))}
    assert {"cpu.busy_pct.cpu0", "cpu.busy_pct.all", "pmu.ipc.cpu0", "pmu.cache_miss_ratio.cpu1"} <= produced
    absent = {"cpu.busy_pct.cpu1", "pmu.ipc.cpu1", "pmu.branch_miss_rate.cpu1", "cpu.busy_mhz.cpu0",
              "net.retrans_per_segment", "net.bytes_per_s.eth0"}
    assert not absent & produced
    assert derived_specs(()) == [] and derived_specs(("cpu.user.cpu0", "mem.MemFree")) == []


def test_spec_order_follows_the_catalog_and_is_deterministic():
    names = ("pmu.instructions.cpu10", "pmu.cycles.cpu2", "pmu.instructions.cpu2", "pmu.cycles.cpu10")
    assert [spec.name for spec in derived_specs(names)] == ["pmu.ipc.cpu10", "pmu.ipc.cpu2"]
    assert derived_specs(names) == derived_specs(names)


def test_unknown_formula_is_rejected():
    with pytest.raises(ValueError, match="median"):
        DerivedSpec("x", "cpu", (0,), "median")


def test_devices_may_contain_dots():
    names = ("net.rx_bytes.eth0.100", "net.tx_bytes.eth0.100")
    assert [spec.name for spec in derived_specs(names)] == ["net.bytes_per_s.eth0.100"]


def test_derive_shapes_and_no_mutation():
    names, values = names_and_values(catalog())
    specs = derived_specs(names)
    before = values.copy()
    out = derive(specs, TIMESTAMPS, values)
    assert out.shape == (2, len(specs))
    np.testing.assert_array_equal(values, before)
    np.testing.assert_array_equal(out, derive(list(specs), TIMESTAMPS, values))
    assert derive([], TIMESTAMPS, values).shape == (2, 0)
    assert derive(specs[:1], TIMESTAMPS[:1], values[:1]).shape == (0, 1)


def test_missing_samples_give_nan_only_where_they_matter():
    series = catalog()
    series["pmu.cycles.cpu0"][1] = np.nan
    derived = derived_by_name(series)
    assert np.isnan(derived["pmu.ipc.cpu0"]).all() and np.isfinite(derived["pmu.ipc.cpu1"]).all()


@pytest.mark.filterwarnings("error")
@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2**34), min_size=8, max_size=8), min_size=2, max_size=12))
def test_busy_percent_stays_within_0_and_100_whatever_the_counters_do(rows):
    names = tuple(f"cpu.{state}.cpu0" for state in STATES[:8])
    out = derive(derived_specs(names), np.arange(len(rows)) * 100_000_000, np.array(rows, dtype=np.float64))
    finite = out[np.isfinite(out)]
    assert ((finite >= 0) & (finite <= 100)).all()


def test_a_catch_up_sample_a_fraction_of_a_millisecond_after_a_late_one_is_not_dozens_of_cores():
    """CPU time in 10 ms ticks, sampled every 100 ms; the sampler fell behind and took two samples 0.4 ms apart,
    one tick between them: over the shortest step the rate is taken over it is a fifth of a core, not 25 cores."""
    timestamps = np.array([0, 100, 290, 290.4, 400]) * 1_000_000
    cpu_usec = np.array([[0.0], [10_000.0], [20_000.0], [30_000.0], [40_000.0]])
    raw = signals(timestamps, cpu_usec, np.array([True]))[:, 0]
    clamped = signals(timestamps, cpu_usec, np.array([True]), min_step_s=0.05)[:, 0]
    assert raw[2] == pytest.approx(10_000 / 0.0004)
    assert clamped[2] == pytest.approx(10_000 / 0.05) and clamped[0] == pytest.approx(10_000 / 0.1)
    assert step_seconds(timestamps, 0.05) == pytest.approx([0.1, 0.19, 0.05, 0.1096])
