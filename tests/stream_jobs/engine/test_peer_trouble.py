"""Trouble one host has and its peers do not: found as soon as enough windows say so, from the start, and never
among alike hosts whose trouble comes in bursts."""

import numpy as np
import pytest

from stream_jobs.engine.peer_trouble import PeerTrouble

NAMES = ("snmp.Tcp.RetransSegs", "cgroup.cpu_nr_throttled.job", "net.tx_bytes.eth0", "agent.dropped_frames")
KINDS = ("event", "event", "counter", "event")
HOSTS = tuple(f"h{i}" for i in range(6))
WINDOW_S, STRIDE_S = 3.0, 1.0


def bursty_rates(rng, hosts=6):
    """Alike hosts: mostly quiet, now and then a burst of retransmissions, always lots of traffic (rates per second)."""
    bursts = rng.random(hosts) < 0.05
    retransmits = np.where(bursts, rng.poisson(40, hosts), rng.poisson(0.3, hosts)) / WINDOW_S
    return np.column_stack([retransmits, np.zeros(hosts), rng.normal(1e8, 1e7, hosts), rng.poisson(5, hosts)])


def test_alike_hosts_with_bursts_of_trouble_are_never_told_apart_in_two_hours():
    trouble, rng = PeerTrouble(WINDOW_S, STRIDE_S), np.random.default_rng(7)
    found = [trouble.compare(w, HOSTS, NAMES, KINDS, bursty_rates(rng)) for w in range(7200)]
    assert sum(map(len, found)) == 0


def test_a_host_throttled_from_the_start_is_found_after_the_windows_the_promise_needs_and_named():
    trouble, rng = PeerTrouble(WINDOW_S, STRIDE_S), np.random.default_rng(3)
    first = None
    for w in range(120):
        rates = bursty_rates(rng)
        rates[2, 1] = 8.0  # throttled periods per second
        found = trouble.compare(w, HOSTS, NAMES, KINDS, rates)
        if found and first is None:
            first, finding = w, found[0]
    # alike hosts are told apart about 0.1 times a day over 6 hosts × 3 channels × 28,800 counted windows a day,
    # so a host must have the most in 9 counted windows running (1/6 ** 9 < 0.1 / 518,400 < 1/6 ** 8)
    assert first == 24
    assert (finding.host, finding.channels[0], finding.windows_most[0], finding.windows) == (
        "h2", "cgroup.cpu_nr_throttled.job", 9, 9)
    assert finding.counts[0] == pytest.approx(9 * 24.0) and finding.peer_counts[0] == 0.0
    assert finding.told() == ("h2 had 216 cgroup.cpu_nr_throttled.job in the last 27 s, its 5 peers a median of 0; "
                              "the most of all in 9 of 9 windows")
    deviation = finding.as_deviation()
    assert deviation.channels[0] == "cgroup.cpu_nr_throttled.job" and deviation.z[0] > 5
    assert deviation.claim == finding.told() and deviation.persisted_windows == 27


def test_a_steady_excess_is_found_sooner_than_the_span_and_the_agent_s_own_trouble_never():
    trouble, rng = PeerTrouble(WINDOW_S, STRIDE_S, span_s=60.0), np.random.default_rng(5)
    hosts_found = set()
    for w in range(300):
        rates = bursty_rates(rng)
        rates[4, 0] += 5.0  # a lossy link: five retransmissions a second more than its peers
        rates[1, 3] = 1e6  # the agent's own dropped frames are not the host's trouble
        hosts_found |= {(f.host, f.channels[0]) for f in trouble.compare(w, HOSTS, NAMES, KINDS, rates)}
    assert hosts_found == {("h4", "snmp.Tcp.RetransSegs")}


def test_too_few_hosts_overlapping_windows_and_unknown_kinds_are_not_compared():
    trouble = PeerTrouble(WINDOW_S, STRIDE_S)
    rates = np.zeros((6, 4))
    rates[0, 0] = 100.0
    assert trouble.compare(1, HOSTS, NAMES, KINDS, rates) == []  # overlaps the window before
    assert trouble.compare(0, HOSTS[:2], NAMES, KINDS, rates[:2]) == []
    assert trouble.compare(0, HOSTS, NAMES, ("counter",) * 4, rates) == []
    with pytest.raises(ValueError):
        PeerTrouble(WINDOW_S, STRIDE_S, span_s=1.0)
