import pytest

from stream_jobs.engine.signatures import (HUGEPAGES_INCONSISTENCY, IRQ_IMBALANCE, NUMA_MISPLACEMENT, PACKET_LOSS,
                                           SIGNATURES, SINGLE_QUEUE_PAIR, match_signature)

NUMA = [("cpu.ipc.cpu4", "mean", -6.5), ("cpu.l3_stall_ratio.cpu4", "mean", 8.1), ("numa.numa_miss.node1", "max", 5.0)]
QUEUE_PAIR = [("cpu.busy_pct.cpu7", "mean", 7.0), ("net.tx_bytes.ib0", "std", 9.0), ("net.rx_bytes.ib0", "std", 6.0),
              ("softirq.NET_RX.cpu7", "mean", 11.0), ("gpu.power.gpu0", "mean", -0.4)]
IRQ = [("irq.total.cpu0", "mean", 14.0), ("softirq.NET_RX.cpu0", "std", 6.0), ("cpu.busy_pct.cpu0", "std", 5.0)]
LOSS = [("net.retrans_per_segment", "max", 7.0), ("snmp.TcpExt.TCPLostRetransmit", "mean", 5.0)]


@pytest.mark.parametrize("evidence, expected", [
    (NUMA, NUMA_MISPLACEMENT), (QUEUE_PAIR, SINGLE_QUEUE_PAIR), (IRQ, IRQ_IMBALANCE), (LOSS, PACKET_LOSS),
    ([("net.rx_drop.eth0", "mean", 6.0)], PACKET_LOSS),
    ([("mem.HugePages_Free", "mean", -9.0)], HUGEPAGES_INCONSISTENCY),
])
def test_each_case_study_is_recognised_from_its_evidence(evidence, expected):
    assert match_signature(evidence) == expected


def test_hugepages_inconsistency_is_recognised_from_the_peer_deviation():
    signature = match_signature([("mem.MemAvailable", "mean", -4.0)], {"mem.HugePages_Total": 900.0})
    assert signature == HUGEPAGES_INCONSISTENCY
    assert signature.hint == "align vm.nr_hugepages across hosts or release unused preallocated HugePages"


def test_hints_name_the_remediation_from_the_paper():
    assert "numactl --cpunodebind/--membind" in NUMA_MISPLACEMENT.hint
    assert "NCCL_IB_QPS_PER_CONNECTION" in SINGLE_QUEUE_PAIR.hint
    assert "irqbalance" in IRQ_IMBALANCE.hint
    assert "retransmission classification" in PACKET_LOSS.hint


@pytest.mark.parametrize("evidence", [
    [],
    [("disk.sectors_read.nvme0n1", "max", 9.0), ("cpu.busy_mhz.cpu2", "std", 6.0)],
    [("snmp.Tcp.RetransSegs", "mean", 8.0)],
    [("cpu.ipc.cpu4", "mean", 6.5), ("cpu.l3_stall_ratio.cpu4", "mean", 8.1)],
    [("cpu.ipc.cpu4", "mean", -6.5)],
    [("irq.total.cpu0", "mean", 1.0)],
    [("mem.HugePages_Total", "std", 2.0)],
])
def test_unrelated_or_weak_evidence_matches_nothing(evidence):
    assert match_signature(evidence, {"mem.HugePages_Total": 1.5, "cpu.busy.cpu1": 30.0}) is None


def test_interrupts_spread_over_many_cpus_are_no_imbalance():
    evidence = [(f"irq.total.cpu{c}", "mean", 9.0) for c in range(4)]
    assert match_signature(evidence) is None


def test_gpu_power_rising_rules_out_a_starved_queue_pair():
    evidence = QUEUE_PAIR[:4] + [("gpu.power.gpu0", "mean", 6.0)]
    assert match_signature(evidence) != SINGLE_QUEUE_PAIR


def test_bursty_traffic_without_interrupts_is_no_queue_pair():
    assert match_signature([QUEUE_PAIR[0], QUEUE_PAIR[1]]) is None


def test_packet_loss_wins_over_the_interrupt_effects_it_causes():
    assert match_signature(LOSS + IRQ) == PACKET_LOSS


def test_every_signature_has_a_name_subsystem_and_hint():
    assert all(s.name and s.subsystem and s.hint for s, _ in SIGNATURES)


def test_interrupts_that_follow_a_cpus_work_are_not_an_irq_imbalance():
    """A process starting on one CPU raises its timer ticks, rescheduling IPIs and scheduler softirqs there; no IRQ
    affinity placed them, so irqbalance is not the remedy."""
    work = [("irq.LOC.cpu1", "mean", 40.0), ("irq.RES.cpu1", "std", 12.0), ("softirq.sched.cpu1", "mean", 9.0),
            ("softirq.timer.cpu1", "max", 6.0), ("cpu.context_switches", "std", 190.0)]
    assert match_signature(work) is None
    assert match_signature(work + [("irq.36.cpu1", "mean", 8.0)]) == IRQ_IMBALANCE
