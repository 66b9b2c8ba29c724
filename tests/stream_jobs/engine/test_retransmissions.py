import numpy as np
import pytest

from stream_jobs.engine.retransmissions import (FAULT_INDUCED, NONE, WORKLOAD_INTRINSIC, RetransBaseline,
                                                RetransWindow, classify)

BASELINE = RetransBaseline(mean_per_segment=2e-4, std_per_segment=5e-5)


def peers(retransmits, window_id=7):
    return [RetransWindow(f"p{i}", window_id, r, 1e6, 1.2) for i, r in enumerate(retransmits)]


def test_retransmissions_in_step_with_shared_bursts_are_workload_intrinsic():
    window = RetransWindow("h1", 7, retransmits=220, segments_out=1e6, traffic_burstiness=1.4)
    verdict = classify(window, peers([180, 240, 200]), BASELINE)
    assert verdict.category == WORKLOAD_INTRINSIC
    assert "within the host's baseline" in verdict.reason and "shared by 3 of 3 peers" in verdict.reason
    assert "traffic burst" in verdict.reason and abs(verdict.rate_z) < 1


def test_loss_confined_to_one_host_at_five_times_the_rate_with_irq_effects_is_fault_induced():
    window = RetransWindow("h1", 7, retransmits=1000, segments_out=1e6, traffic_burstiness=0.2, irq_z=9.0)
    verdict = classify(window, peers([0, 0, 0]), BASELINE)
    assert verdict.category == FAULT_INDUCED
    assert "above the host's baseline" in verdict.reason and "IRQ/softirq z=+9.0" in verdict.reason
    assert "confined to this host" in verdict.reason and verdict.rate_z > 10


def test_no_retransmissions_is_none():
    verdict = classify(RetransWindow("h1", 7, 0, 1e6, 1.0, irq_z=9.0), peers([50]), BASELINE)
    assert verdict.category == NONE and verdict.rate_z == 0.0


@pytest.mark.parametrize("effect", ["irq_z", "cpu_freq_z", "gpu_power_z"])
def test_any_cross_subsystem_effect_makes_a_normal_rate_fault_induced(effect):
    window = RetransWindow("h1", 7, 200, 1e6, 1.4, **{effect: -5.0})
    assert classify(window, peers([150, 150]), BASELINE).category == FAULT_INDUCED


def test_a_lone_host_in_a_burst_is_still_workload_intrinsic():
    window = RetransWindow("h1", 7, 200, 1e6, traffic_burstiness=2.0)
    assert classify(window, peers([0, 0]), BASELINE).category == WORKLOAD_INTRINSIC


def test_the_host_itself_in_the_peer_list_is_ignored():
    window = RetransWindow("h1", 7, 200, 1e6, traffic_burstiness=0.1)
    assert classify(window, [window], BASELINE).category == WORKLOAD_INTRINSIC
    assert classify(window, [window] + peers([0]), BASELINE).category == FAULT_INDUCED


def test_the_baseline_is_fitted_from_per_window_rates():
    baseline = RetransBaseline.fit(np.array([10.0, 30.0, np.nan]), np.array([1e5, 1e5, 1e5]))
    assert baseline.mean_per_segment == pytest.approx(2e-4) and baseline.std_per_segment == pytest.approx(1e-4)
    assert RetransBaseline.fit(np.array([]), np.array([])) == RetransBaseline(0.0, 0.0)


def test_a_quiet_baseline_does_not_turn_one_retransmit_into_a_fault():
    window = RetransWindow("h1", 7, 1, 1e6, 0.3)
    assert classify(window, [], RetransBaseline(0.0, 0.0)).category == WORKLOAD_INTRINSIC
