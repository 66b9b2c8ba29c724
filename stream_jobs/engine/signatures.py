"""Known anomaly signatures from the paper's case studies (§6), each with the remediation that fixed it.

A signature is a rule over an anomalous window's evidence, the (channel, feature, z) triples of its top
metric–feature pairs, and optionally the host's deviation from its peers (channel → robust z). A channel "rises"
when a level feature (mean, min, max) has z ≥ SIGNIFICANT_Z and "falls" when it has z ≤ −SIGNIFICANT_Z; it is
"bursty" when its within-window spread (std) or its maximum has z ≥ SIGNIFICANT_Z. Rules are tried in the order of
SIGNATURES, most specific first, and the first that holds wins:

- packet loss: retransmissions per segment, TCPLostRetransmit, or drop/error counters rise (§6 injected loss; raw
  retransmission counts alone are normal for bursty ML traffic and match nothing);
- NUMA misplacement: IPC falls while L3-miss stalls or remote-node NUMA counters rise (§6, windows 118–123);
- HugePages inconsistency: a HugePages channel differs from the peers, or rises or falls on the host (§6, 9 hosts);
- single NCCL queue pair: CPU busy rises on a few cores, network traffic turns bursty and interrupts rise on a few
  CPUs, while GPU power does not rise (§6, windows 64–66);
- IRQ imbalance: interrupt or softirq counters that IRQ affinity places rise on one CPU only (§6, windows
  1115–1118); the local timer, IPIs and the timer, scheduler and RCU softirqs follow a CPU's work instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

SIGNIFICANT_Z = 3.0
LEVEL_FEATURES = frozenset({"mean", "min", "max"})
BURST_FEATURES = frozenset({"std", "max"})
# "A few cores": the completion handling of one queue pair lands on at most this many CPUs.
FEW_CPUS = 2

Evidence = list[tuple[str, str, float]]

_RETRANS_RATE = re.compile(r"^net\.retrans_per_segment|^snmp\.TcpExt\.TCPLostRetransmit")
_DROPS = re.compile(r"^net\.(rx|tx)_(drop|errs|fifo)\.|^net\.softnet_dropped|^snmp\.\w+\.\w*(Drop|Discard|Errors)"
                    r"|^ib\.\w*(discards|errors|symbol_error)")
_IPC = re.compile(r"(^|\.)ipc(\.|$)")
_MEMORY_LOCALITY = re.compile(r"stall_ratio|stalls_l3_miss|l3_miss|^numa\.(numa_miss|numa_foreign|other_node)\.")
_HUGEPAGES = re.compile(r"^mem\.(HugePages_\w+|Hugetlb|Hugepagesize)|^vm\.nr_hugepages")
_CPU_BUSY = re.compile(r"^cpu\.(busy_pct|busy|utilization|system|softirq)\.cpu\d+$")
_TRAFFIC = re.compile(r"^net\.(rx|tx)_(bytes|packets)\.|^ib\.port_(rcv|xmit)_(data|packets)\.")
_INTERRUPTS = re.compile(r"^(irq|softirq)\.\w+\.cpu\d+$")
# Interrupts that follow the work a CPU runs (local timer, IPIs, TLB shootdowns; timer, scheduler and RCU softirqs),
# which no IRQ affinity places.
_WORK_INTERRUPTS = re.compile(r"^irq\.(LOC|RES|CAL|TLB|IWI|PMI|SPU|NMI)\.|^softirq\.(timer|hrtimer|sched|rcu)\.",
                              re.IGNORECASE)
_GPU_POWER = re.compile(r"^gpu\.power\.")


@dataclass(frozen=True)
class Signature:
    """A recognised pattern of anomalies and what an operator should do about it."""

    name: str
    subsystem: str
    hint: str


def _rises(evidence: Evidence, pattern: re.Pattern) -> list[str]:
    return [c for c, f, z in evidence if f in LEVEL_FEATURES and z >= SIGNIFICANT_Z and pattern.search(c)]


def _falls(evidence: Evidence, pattern: re.Pattern) -> list[str]:
    return [c for c, f, z in evidence if f in LEVEL_FEATURES and z <= -SIGNIFICANT_Z and pattern.search(c)]


def _bursty(evidence: Evidence, pattern: re.Pattern) -> list[str]:
    return [c for c, f, z in evidence if f in BURST_FEATURES and z >= SIGNIFICANT_Z and pattern.search(c)]


def _surges(evidence: Evidence, pattern: re.Pattern) -> list[str]:
    """Channels that rise or turn bursty."""
    return _rises(evidence, pattern) + _bursty(evidence, pattern)


def _cpus(channels: list[str]) -> set[str]:
    """The CPU devices ('cpu5') that channels named 'metric.cpuN' belong to."""
    return {c.rsplit(".", 1)[1] for c in channels}


def _packet_loss(evidence: Evidence, peers: dict[str, float]) -> bool:
    return bool(_surges(evidence, _RETRANS_RATE) or _rises(evidence, _DROPS))


def _numa_misplacement(evidence: Evidence, peers: dict[str, float]) -> bool:
    return bool(_falls(evidence, _IPC) and _rises(evidence, _MEMORY_LOCALITY))


def _hugepages_inconsistency(evidence: Evidence, peers: dict[str, float]) -> bool:
    differs = any(abs(z) >= SIGNIFICANT_Z and _HUGEPAGES.search(c) for c, z in peers.items())
    return differs or bool(_rises(evidence, _HUGEPAGES) or _falls(evidence, _HUGEPAGES))


def _single_queue_pair(evidence: Evidence, peers: dict[str, float]) -> bool:
    busy = _cpus(_surges(evidence, _CPU_BUSY))
    interrupts = _cpus(_surges(evidence, _INTERRUPTS))
    few_cores = 0 < len(busy) <= FEW_CPUS and 0 < len(interrupts) <= FEW_CPUS
    return few_cores and bool(_bursty(evidence, _TRAFFIC)) and not _rises(evidence, _GPU_POWER)


def _irq_imbalance(evidence: Evidence, peers: dict[str, float]) -> bool:
    placed = [c for c in _surges(evidence, _INTERRUPTS) if not _WORK_INTERRUPTS.search(c)]
    return len(_cpus(placed)) == 1


PACKET_LOSS = Signature(
    "packet loss", "network",
    "check the link/port: errors, optics, switch drops; see retransmission classification")
NUMA_MISPLACEMENT = Signature(
    "NUMA misplacement", "memory",
    "bind the job's CPUs and memory to the NIC/GPU-local NUMA node (numactl --cpunodebind/--membind)")
HUGEPAGES_INCONSISTENCY = Signature(
    "HugePages inconsistency", "memory",
    "align vm.nr_hugepages across hosts or release unused preallocated HugePages")
SINGLE_QUEUE_PAIR = Signature(
    "single NCCL queue pair", "network",
    "raise NCCL_IB_QPS_PER_CONNECTION / NCCL_NCHANNELS")
IRQ_IMBALANCE = Signature(
    "IRQ imbalance", "cpu",
    "enable irqbalance or spread the NIC's IRQ affinity across NUMA-local cores")

SIGNATURES: tuple[tuple[Signature, Callable[[Evidence, dict[str, float]], bool]], ...] = (
    (PACKET_LOSS, _packet_loss),
    (NUMA_MISPLACEMENT, _numa_misplacement),
    (HUGEPAGES_INCONSISTENCY, _hugepages_inconsistency),
    (SINGLE_QUEUE_PAIR, _single_queue_pair),
    (IRQ_IMBALANCE, _irq_imbalance),
)


def match_signature(evidence, peer_deviation: dict[str, float] | None = None) -> Signature | None:
    """The first known signature the evidence (and the host's peer deviation, channel → z) fits, else None.

    >>> match_signature([("irq.total.cpu0", "mean", 9.0)]).name
    'IRQ imbalance'
    >>> match_signature([("disk.sectors_read.sda", "max", 8.0)]) is None
    True
    """
    triples = [(str(c), str(f), float(z)) for c, f, z in evidence]
    peers = dict(peer_deviation or {})
    return next((signature for signature, holds in SIGNATURES if holds(triples, peers)), None)
