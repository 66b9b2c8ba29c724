import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from stream_jobs.engine.crosshost import HostSummary, PeerComparator, common_matrix, robust_z
from stream_jobs.engine.signatures import HUGEPAGES_INCONSISTENCY, match_signature

NAMES = ("mem.HugePages_Total", "mem.MemAvailable", "cpu.busy.cpu0", "net.rx_bytes.eth0")


def window(window_id, hugepages=(512, 512, 512, 512), seed=0):
    rng = np.random.default_rng(seed * 1000 + window_id)
    summaries = []
    for index, pages in enumerate(hugepages):
        values = np.array([pages, 2e11, 60.0, 1e9]) * (1 + 0.01 * rng.normal(size=4))
        values[0] = pages
        summaries.append(HostSummary(f"h{index}", window_id, NAMES, values))
    return summaries


def test_a_host_with_ten_times_the_hugepages_is_one_configuration_finding_not_a_deviation():
    comparator = PeerComparator(persist_windows=5, learn_windows=10)
    results = [comparator.compare(w, window(w, hugepages=(512, 512, 5120, 512))) for w in range(40)]
    assert results == [[]] * 40
    [difference] = [d for d in comparator.take_configuration()]
    assert (difference.host, difference.window_id, difference.channels) == ("h2", 9, ("mem.HugePages_Total",))
    assert difference.values == (5120.0,) and difference.peer_values == (512.0,) and difference.peers == 3
    assert match_signature([], difference.as_dict()) == HUGEPAGES_INCONSISTENCY
    assert comparator.take_configuration() == []



def test_a_level_that_steps_with_its_peers_from_a_higher_start_is_usage_not_configuration():
    """A cgroup's page cache a few pages above its peers', every host's growing by a page now and then: the distance
    holds still in most windows, but the host's own value moves, so it is no setting of the host."""
    comparator = PeerComparator(persist_windows=5, learn_windows=10)
    for w in range(40):
        cache = 4096.0 * (5 + w // 4)
        summaries = window(w)
        for index, summary in enumerate(summaries):
            summary.values[1] = cache + 8 * 4096.0 * (index == 2)
        comparator.compare(w, summaries)
    assert comparator.take_configuration() == []

def test_a_host_leaving_its_usual_offset_is_a_finding_after_persist_windows():
    comparator = PeerComparator(persist_windows=5, learn_windows=10)
    results = [comparator.compare(w, window(w)) for w in range(10)]
    results += [comparator.compare(w, window(w, hugepages=(512, 512, 5120, 512))) for w in range(10, 17)]
    assert results[:14] == [[]] * 14
    finding = results[14][0]
    assert (finding.host, finding.window_id, finding.persisted_windows, finding.peers) == ("h2", 14, 5, 3)
    assert finding.channels == ("mem.HugePages_Total",) and finding.z[0] > 100
    assert [f.persisted_windows for f in results[16]] == [7]
    assert match_signature([], finding.as_dict()) == HUGEPAGES_INCONSISTENCY


def test_a_rank_with_a_steady_offset_of_its_own_is_no_finding():
    comparator = PeerComparator(persist_windows=3, learn_windows=10)
    rng = np.random.default_rng(5)
    for w in range(300):
        values = [np.array([512.0, 2e11, 60.0 + 20.0 * (h == 1), 1e9]) * (1 + 0.01 * rng.normal(size=4))
                  for h in range(4)]
        assert comparator.compare(w, [HostSummary(f"h{h}", w, NAMES, v) for h, v in enumerate(values)]) == []


def _busy_after(w: int, start: int, learning: bool) -> list[HostSummary]:
    """Four hosts; h1's traffic starts at window `start` (its peers' was there from the first)."""
    rng = np.random.default_rng(w)
    rows = [np.array([512.0, 2e11, 60.0, 1e9 if h != 1 or w >= start else 0.0]) * (1 + 0.01 * rng.normal(size=4))
            for h in range(4)]
    return [HostSummary(f"h{h}", w, NAMES, v, learning) for h, v in enumerate(rows)]


def test_offsets_are_learned_over_the_hosts_whole_baseline_not_its_first_minutes():
    comparator = PeerComparator(persist_windows=20, learn_windows=10)
    results = [comparator.compare(w, _busy_after(w, 30, learning=w < 900)) for w in range(1200)]
    assert results == [[]] * 1200, "the traffic that started while the baseline was learned is the host's usual place"
    only_first_minutes = PeerComparator(persist_windows=20, learn_windows=10)
    results = [only_first_minutes.compare(w, _busy_after(w, 30, learning=False)) for w in range(60)]
    assert results[-1] and results[-1][0].channels == ("net.rx_bytes.eth0",)


def test_identical_hosts_give_no_finding_and_zero_z():
    comparator = PeerComparator(persist_windows=2, learn_windows=10)
    summaries = [HostSummary(f"h{i}", 1, NAMES, np.array([512.0, 2e11, 60.0, 1e9])) for i in range(4)]
    assert comparator.scores(summaries).z.tolist() == [[0.0] * 4] * 4
    assert all(comparator.compare(w, summaries) == [] for w in range(30))
    assert comparator.take_configuration() == []


def test_a_transient_deviation_is_not_a_finding():
    comparator = PeerComparator(persist_windows=5, learn_windows=10)
    odd = [(512, 512, 5120, 512) if w in (13, 14, 15, 19) else (512,) * 4 for w in range(30)]
    assert all(comparator.compare(w, window(w, hugepages=odd[w])) == [] for w in range(30))


def test_a_missed_window_restarts_the_count():
    comparator = PeerComparator(persist_windows=3, learn_windows=10)
    for w in range(10):
        comparator.compare(w, window(w))
    skewed = (512, 512, 5120, 512)
    assert [comparator.compare(w, window(w, skewed)) for w in (10, 11, 13, 14)] == [[]] * 4
    assert comparator.compare(15, window(15, skewed))[0].host == "h2"


def test_too_few_peers_give_nothing():
    comparator = PeerComparator(min_peers=2, persist_windows=1, learn_windows=10)
    assert comparator.compare(1, window(1, hugepages=(512, 5120))) == []
    for w in range(2, 12):
        assert comparator.compare(w, window(w, hugepages=(512, 512, 512))) == []
    assert comparator.compare(12, window(12, hugepages=(512, 512, 5120)))[0].host == "h2"


def test_hosts_are_aligned_on_their_common_channels():
    summaries = [HostSummary("a", 1, ("x", "y", "z"), np.array([1.0, 2.0, 3.0])),
                 HostSummary("b", 1, ("z", "x"), np.array([30.0, 10.0])),
                 HostSummary("c", 1, ("w", "x", "z"), np.array([0.0, 100.0, 300.0]))]
    names, matrix = common_matrix(summaries)
    assert names == ("x", "z")
    np.testing.assert_array_equal(matrix, [[1.0, 3.0], [10.0, 30.0], [100.0, 300.0]])



def test_hosts_with_the_same_channels_keep_their_order_and_values():
    names = ("x", "y")
    summaries = [HostSummary(h, 1, names, np.array([v, 2 * v])) for h, v in (("a", 1.0), ("b", 5.0))]
    assert common_matrix(summaries)[0] == names
    np.testing.assert_array_equal(common_matrix(summaries)[1], [[1.0, 2.0], [5.0, 10.0]])

def test_a_channel_set_change_learns_the_offsets_again():
    comparator = PeerComparator(persist_windows=1, learn_windows=10)
    for w in range(10):
        comparator.compare(w, window(w))
    reordered = lambda w, pages: [HostSummary(s.host, w, s.names[::-1] + ("new.channel",), np.append(s.values[::-1], 1.0))
                                  for s in window(w, pages)]
    assert comparator.compare(10, reordered(10, (512, 512, 5120, 512))) == []
    for w in range(11, 21):
        comparator.compare(w, reordered(w, (512,) * 4))
    assert comparator.compare(21, reordered(21, (512, 512, 5120, 512)))[0].channels == ("mem.HugePages_Total",)


def test_a_host_listed_twice_is_an_error():
    summaries = window(1)
    with pytest.raises(ValueError, match="twice"):
        PeerComparator().compare(1, summaries + summaries[:1])


def test_a_summary_must_have_one_value_per_name():
    with pytest.raises(ValueError, match="2 names but 1 values"):
        HostSummary("h", 1, ("a", "b"), np.array([1.0]))
    assert common_matrix([])[0] == ()


def test_missing_values_do_not_deviate():
    matrix = np.array([[1.0, np.nan], [1.0, 5.0], [1.0, np.inf], [1.0, 5.0]])
    assert np.isfinite(robust_z(matrix)).all() and robust_z(matrix)[0, 1] == 0.0


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 8), st.integers(0, 6)),
              elements=st.floats(-1e12, 1e12, allow_nan=False)), st.integers(1, 3))
def test_any_finite_matrix_is_compared_without_error(matrix, persist):
    comparator = PeerComparator(min_peers=1, persist_windows=persist)
    names = tuple(f"c{i}" for i in range(matrix.shape[1]))
    for w in range(3):
        summaries = [HostSummary(f"h{r}", w, names, matrix[r]) for r in range(matrix.shape[0])]
        for finding in comparator.compare(w, summaries):
            assert np.isfinite(finding.z).all() and finding.channels
    assert np.isfinite(robust_z(matrix)).all()


SETTINGS_NAMES = ("net.mtu.eth0", "net.tcp_congestion.reno", "cpu.temp_c.core0", "net.rx_bytes.eth0")
SETTINGS_KINDS = ("static", "static", "static", "counter")


def settings_window(window_id, mtu=(1500, 1500, 1500, 1500, 1500), reno=(0, 0, 0, 0, 0)):
    rng = np.random.default_rng(window_id)
    return [HostSummary(f"h{i}", window_id, SETTINGS_NAMES, np.array([mtu[i], reno[i], 50 + rng.normal(), 1e9]),
                        kinds=SETTINGS_KINDS) for i in range(len(mtu))]


def test_a_setting_unlike_the_one_its_peers_share_is_reported_in_the_first_window_and_once():
    comparator = PeerComparator(persist_windows=5, learn_windows=10)
    for w in range(20):
        comparator.compare(w, settings_window(w, mtu=(1500, 1400, 1500, 1500, 1500), reno=(0, 0, 0, 1, 0)))
        if w == 0:
            first = comparator.take_configuration()
    later = comparator.take_configuration()
    assert [(d.host, d.window_id, d.channels, d.values, d.peer_values) for d in first] == [
        ("h1", 0, ("net.mtu.eth0",), (1400.0,), (1500.0,)), ("h3", 0, ("net.tcp_congestion.reno",), (1.0,), (0.0,))]
    assert later == []  # a temperature differs on every host, so its peers share no value to differ from


def test_a_setting_that_changes_again_is_reported_again_and_hosts_that_do_not_say_kinds_are_not_compared():
    comparator = PeerComparator(persist_windows=5, learn_windows=10)
    comparator.compare(0, settings_window(0, mtu=(1500, 1400, 1500, 1500, 1500)))
    comparator.compare(1, settings_window(1, mtu=(1500, 9000, 1500, 1500, 1500)))
    assert [d.values for d in comparator.take_configuration()] == [(1400.0,), (9000.0,)]
    unsaid = [HostSummary(s.host, 2, s.names, s.values) for s in settings_window(2, mtu=(1500, 1400, 1500, 1500, 1500))]
    comparator = PeerComparator(persist_windows=5, learn_windows=10)
    comparator.compare(2, unsaid)
    assert comparator.take_configuration() == []


def test_a_host_on_another_congestion_control_is_told_by_the_one_it_has_on():
    names, kinds = ("net.tcp_congestion.bbr", "net.tcp_congestion.reno"), ("static", "static")
    summaries = [HostSummary(f"h{i}", 0, names, np.array([0.0, 1.0]) if i == 2 else np.array([1.0, 0.0]),
                             kinds=kinds) for i in range(4)]
    comparator = PeerComparator()
    comparator.compare(0, summaries)
    [difference] = comparator.take_configuration()
    assert difference.channels == ("net.tcp_congestion.reno", "net.tcp_congestion.bbr")
    assert difference.values == (1.0, 0.0) and difference.peer_values == (0.0, 1.0)
