"""Retransmission classification (paper §6, injected packet loss): workload-intrinsic or fault-induced.

The paper's observations: bursty, high-volume ML traffic retransmits on its own (thousands of retransmissions per
fine-tuning run, in bursts, on every host), and injected loss did not multiply the counts by orders of magnitude;
it changed their pattern. "When they co-occur with cross-subsystem effects (e.g., IRQ imbalance and GPU stalls),
they are classified as fault-induced; when confined to workload traffic patterns, they are identified as
workload-intrinsic." A window with retransmissions is therefore fault-induced when any of these holds:

- its retransmissions per segment sit well above the host's own baseline rate (z ≥ rate_z);
- an interrupt, CPU-frequency or GPU-power effect co-occurs on the host (|z| ≥ effect_z; at 1 % loss the paper saw
  retransmission spikes with IRQ variance and Bzy_MHz oscillations);
- it is confined to this host (peers were compared and none retransmitted) and the host's own traffic was not
  bursty, so no burst of the workload explains it (a faulty link or port is local; congestion from collective
  bursts is shared).

Otherwise it is workload-intrinsic: in step with the host's traffic bursts, shared by peers, at a rate within the
host's baseline.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NONE = "none"
WORKLOAD_INTRINSIC = "workload-intrinsic"
FAULT_INDUCED = "fault-induced"


@dataclass(frozen=True)
class RetransWindow:
    """One host's TCP retransmission context over one window."""

    host: str
    window_id: int
    retransmits: float
    segments_out: float
    traffic_burstiness: float
    irq_z: float = 0.0
    cpu_freq_z: float = 0.0
    gpu_power_z: float = 0.0

    @property
    def retransmits_per_segment(self) -> float:
        """Retransmitted over sent segments (Linux counts OutSegs without retransmissions, so this may exceed 1)."""
        return float(self.retransmits) / float(np.fmax(self.segments_out, 1.0))


@dataclass(frozen=True)
class RetransBaseline:
    """A host's usual retransmissions per segment, from its baseline windows."""

    mean_per_segment: float
    std_per_segment: float

    @classmethod
    def fit(cls, retransmits: np.ndarray, segments_out: np.ndarray) -> RetransBaseline:
        """The mean and spread of per-window rates (windows with non-finite counts take no part)."""
        rates = np.asarray(retransmits, dtype=np.float64) / np.fmax(np.asarray(segments_out, dtype=np.float64), 1.0)
        rates = rates[np.isfinite(rates)]
        return cls(float(rates.mean()), float(rates.std())) if rates.size else cls(0.0, 0.0)

    def z(self, rate: float, relative_floor: float = 0.1, absolute_floor: float = 1e-6) -> float:
        """How far a rate sits above the baseline, in baseline spreads (floored so a quiet baseline stays sane)."""
        scale = max(self.std_per_segment, relative_floor * abs(self.mean_per_segment), absolute_floor)
        return (rate - self.mean_per_segment) / scale


@dataclass(frozen=True)
class RetransRules:
    """Thresholds of the classification: baseline z of the rate, |z| of an effect, CV of a burst, peer share."""

    rate_z: float = 3.0
    effect_z: float = 3.0
    bursty_cv: float = 0.5
    shared_fraction: float = 0.5


@dataclass(frozen=True)
class RetransVerdict:
    """The category of one host-window's retransmissions, why, and how far the rate sits above baseline."""

    host: str
    window_id: int
    category: str
    reason: str
    rate_z: float


def classify(window: RetransWindow, peers: list[RetransWindow], baseline: RetransBaseline,
             rules: RetransRules = RetransRules()) -> RetransVerdict:
    """Whether the window's retransmissions are the workload's own, a fault's, or absent.

    >>> base = RetransBaseline(1e-4, 2e-5)
    >>> classify(RetransWindow("h1", 7, 50, 1e5, 0.1, irq_z=8.0), [], base).category
    'fault-induced'
    """
    if not np.isfinite(window.retransmits) or window.retransmits <= 0:
        return RetransVerdict(window.host, window.window_id, NONE, "no retransmissions in the window", 0.0)
    rate = window.retransmits_per_segment
    rate_z = baseline.z(rate)
    faults = _fault_reasons(window, peers, rate, rate_z, rules)
    if faults:
        return RetransVerdict(window.host, window.window_id, FAULT_INDUCED, "; ".join(faults), rate_z)
    return RetransVerdict(window.host, window.window_id, WORKLOAD_INTRINSIC,
                          "; ".join(_workload_reasons(window, peers, rate, rate_z, rules)), rate_z)


def _fault_reasons(window: RetransWindow, peers: list[RetransWindow], rate: float, rate_z: float,
                   rules: RetransRules) -> list[str]:
    reasons = []
    if rate_z >= rules.rate_z:
        reasons.append(f"{rate:.3g} retransmits per segment, {rate_z:.1f}σ above the host's baseline")
    effects = {"IRQ/softirq": window.irq_z, "CPU frequency": window.cpu_freq_z, "GPU power": window.gpu_power_z}
    strong = [f"{name} z={z:+.1f}" for name, z in effects.items() if np.isfinite(z) and abs(z) >= rules.effect_z]
    if strong:
        reasons.append("co-occurs with " + ", ".join(strong))
    others = _others(window, peers)
    if others and _retransmitting(others) == 0 and not _bursty(window, rules):
        reasons.append(f"confined to this host (none of {len(others)} peers retransmitted) without a traffic burst")
    return reasons


def _workload_reasons(window: RetransWindow, peers: list[RetransWindow], rate: float, rate_z: float,
                      rules: RetransRules) -> list[str]:
    reasons = [f"{rate:.3g} retransmits per segment, within the host's baseline (z={rate_z:+.1f})"]
    if _bursty(window, rules):
        reasons.append(f"in step with a traffic burst (CV {window.traffic_burstiness:.2f})")
    others = _others(window, peers)
    if others:
        shared = _retransmitting(others)
        verb = "shared by" if shared >= rules.shared_fraction * len(others) else "seen on"
        reasons.append(f"{verb} {shared} of {len(others)} peers")
    return reasons


def _others(window: RetransWindow, peers: list[RetransWindow]) -> list[RetransWindow]:
    return [p for p in peers if p.host != window.host]


def _retransmitting(peers: list[RetransWindow]) -> int:
    return sum(1 for p in peers if np.isfinite(p.retransmits) and p.retransmits > 0)


def _bursty(window: RetransWindow, rules: RetransRules) -> bool:
    return bool(np.isfinite(window.traffic_burstiness) and window.traffic_burstiness >= rules.bursty_cv)
