"""The retransmission count model: loss per segment learned, evidence accumulated, shared alarms are the job's."""

import numpy as np
import pytest

from stream_jobs.engine.retransmissions import (FAULT_INDUCED, NONE, WORKLOAD_INTRINSIC, RetransMonitor, RetransRules,
                                                RetransWindow, classify)


def _clean_windows(rng, count, sent=6000, rate=5e-5, burst_every=40, burst=45):
    """Traffic with a low loss rate and, now and then, a burst of spurious (DSACK-confirmed) retransmissions."""
    for i in range(count):
        lost = rng.poisson(rate * sent)
        spurious = burst if i % burst_every == 0 else 0
        yield RetransWindow("h1", i, lost + spurious, sent, spurious)


def _verdicts(monitor, windows):
    out = []
    for window in windows:
        alarmed, z = monitor.observe(window)
        out.append(classify(window, alarmed, z, 0, 5, monitor))
    return out


def test_clean_traffic_with_spurious_bursts_never_alarms():
    monitor = RetransMonitor()
    verdicts = _verdicts(monitor, _clean_windows(np.random.default_rng(1), 20_000))
    assert not any(v.category == FAULT_INDUCED for v in verdicts)
    assert any(v.category == WORKLOAD_INTRINSIC for v in verdicts)


def test_a_tenth_of_a_percent_loss_is_found_within_seconds_and_held_while_it_lasts():
    rng = np.random.default_rng(2)
    monitor = RetransMonitor()
    _verdicts(monitor, _clean_windows(rng, 600))
    lossy = [RetransWindow("h1", 600 + i, rng.poisson(6000 * (5e-5 + 1e-3)) + 0.0, 6000) for i in range(30)]
    verdicts = _verdicts(monitor, lossy)
    first = next(i for i, v in enumerate(verdicts) if v.category == FAULT_INDUCED)
    assert first <= 8
    assert all(v.category == FAULT_INDUCED for v in verdicts[first:] if v.category != NONE)
    assert "lost" in verdicts[-1].reason and verdicts[-1].evidence >= RetransRules().alarm / 2


def test_one_burst_of_real_loss_does_not_decide_alone():
    monitor = RetransMonitor()
    _verdicts(monitor, _clean_windows(np.random.default_rng(3), 600, burst_every=10**9))
    burst = [RetransWindow("h1", 600 + i, 200.0, 6000) for i in range(3)]
    assert not any(v.category == FAULT_INDUCED for v in _verdicts(monitor, burst))


def test_an_alarm_most_peers_share_is_the_jobs_congestion():
    monitor = RetransMonitor()
    _verdicts(monitor, _clean_windows(np.random.default_rng(4), 600))
    window = RetransWindow("h1", 700, 80.0, 6000)
    verdict = classify(window, True, 30.0, 4, 5, monitor)
    assert verdict.category == WORKLOAD_INTRINSIC and "shared by 4 of 5 peers" in verdict.reason
    assert classify(window, True, 30.0, 1, 5, monitor).category == FAULT_INDUCED


def test_a_window_without_retransmissions_is_none_and_the_model_learns_from_the_first_window():
    monitor = RetransMonitor()
    before = monitor.loss_rate
    alarmed, z = monitor.observe(RetransWindow("h1", 0, 0.0, 50_000))
    assert classify(RetransWindow("h1", 0, 0.0, 50_000), alarmed, z, 0, 5, monitor).category == NONE
    assert monitor.loss_rate < before


def test_rules_refuse_nonsense():
    with pytest.raises(ValueError, match="rate_multiple"):
        RetransRules(rate_multiple=1.0)


def test_an_alarm_ends_within_seconds_of_the_loss_however_long_it_lasted():
    rng = np.random.default_rng(5)
    monitor = RetransMonitor()
    _verdicts(monitor, _clean_windows(rng, 600, burst_every=10**9))
    lossy = [RetransWindow("h1", 600 + i, rng.poisson(6000 * 2e-3) + 0.0, 6000) for i in range(600)]
    assert _verdicts(monitor, lossy)[-1].category == FAULT_INDUCED
    after = _verdicts(monitor, (RetransWindow("h1", 1200 + w.window_id, w.retransmits, w.sent, w.spurious)
                                for w in _clean_windows(rng, 60, rate=0.0, burst_every=10**9, burst=0)))
    assert not monitor.alarmed
    assert all(v.category != FAULT_INDUCED for v in after[15:])


def test_a_bulk_dsack_confirmation_during_loss_does_not_hide_it():
    rng = np.random.default_rng(6)
    lossy = lambda i: RetransWindow("h1", 600 + i, rng.poisson(6000 * 1e-3) + 0.0, 6000)  # noqa: E731
    bulk = lambda i: RetransWindow("h1", 600 + i, 6.0, 6000, spurious=300.0)  # noqa: E731
    monitor = RetransMonitor()
    _verdicts(monitor, _clean_windows(rng, 600, burst_every=10**9))
    verdicts = _verdicts(monitor, [lossy(i) if i % 4 else bulk(i) for i in range(40)])
    assert sum(v.category == FAULT_INDUCED for v in verdicts) >= 30
    assert monitor.confirms_other_windows(bulk(0)) and not monitor.confirms_other_windows(
        RetransWindow("h1", 0, 5.0, 6000, spurious=6.0))


def test_a_clean_host_whose_loss_comes_in_clumps_at_three_times_its_usual_rate_does_not_alarm():
    """Real loss is overdispersed: a clean host's lost segments arrive in clumps, so its loss per segment can run at
    three times its long-run rate for a minute. A lossy link adds tens of times that."""
    rng = np.random.default_rng(5)
    monitor = RetransMonitor()
    _verdicts(monitor, _clean_windows(rng, 600, burst_every=10**9))
    clumped = [RetransWindow("h1", 600 + i, float(rng.poisson(3 * 5e-5 * 6000)), 6000) for i in range(120)]
    assert not any(v.category == FAULT_INDUCED for v in _verdicts(monitor, clumped))


def test_the_loss_rate_learns_from_the_last_history_windows_alone():
    rules = RetransRules(history_windows=3)
    monitor = RetransMonitor(rules)
    windows = [(2.0, 1000.0), (0.0, 3000.0), (5.0, 2000.0), (1.0, 4000.0), (3.0, 500.0)]
    for lost, sent in windows:
        monitor._learn(lost, sent)
    lost, sent = map(sum, zip(*windows[-3:]))
    assert monitor.loss_rate == pytest.approx((lost + rules.prior_lost) / (sent + rules.prior_segments), rel=1e-12)
    with pytest.raises(ValueError, match="history_windows"):
        RetransRules(history_windows=0)


def test_a_host_lossy_from_its_first_window_learns_its_loss_as_usual_unless_its_peers_lose_less():
    """0.1 % loss from the start: on its own the host takes it for its normal; against peers whose alike traffic
    loses 5e-5 per segment it is fault-induced within seconds, and stays so."""
    rng = np.random.default_rng(4)
    lossy = [RetransWindow("h1", i, rng.poisson(6000 * (5e-5 + 1e-3)) + 0.0, 6000) for i in range(600)]
    alone = RetransMonitor()
    assert not any(alone.observe(window)[0] for window in lossy)
    compared = RetransMonitor()
    alarms = [compared.observe(window, peer_rate=5e-5)[0] for window in lossy]
    assert alarms.index(True) <= 8 and all(alarms[alarms.index(True):])
