"""The one naming rule: a finding is named after a candidate it holds, state before CPU time before memory work,
CPU time leading only far beyond a state."""

import pytest
from hypothesis import given, strategies as st

from stream_jobs.engine.decide.naming import CPU_YIELDS_WITHIN, lead, naming_rank

CHANNELS = st.lists(st.tuples(st.sampled_from(["cpu.busy.cpu0", "vm.pgreuse", "mem.Dirty", "disk.busy.vda",
                                               "net.rx_bytes.eth0", "vm.numa_hit"]),
                              st.floats(0.0, 1e6)), min_size=1, max_size=8)
def channels_lead(channels):
    """The lead of (channel, subsystem, distance) triples."""
    return lead(channels, lambda c: naming_rank(c[0], c[1]), lambda c: abs(c[2]))


SUBSYSTEMS = {"cpu.busy.cpu0": "cpu", "vm.pgreuse": "memory", "mem.Dirty": "memory", "disk.busy.vda": "storage",
              "net.rx_bytes.eth0": "network", "vm.numa_hit": "memory"}


@given(CHANNELS)
def test_the_lead_is_always_one_of_the_candidates(channels):
    triples = [(name, SUBSYSTEMS[name], distance) for name, distance in channels]
    assert channels_lead(triples) in triples


def test_a_state_leads_cpu_time_within_the_yield_and_memory_work_only_alone():
    cpu, disk, work = ("cpu.busy.cpu0", "cpu", 40.0), ("disk.busy.vda", "storage", 12.0), ("vm.pgreuse", "memory", 1e4)
    assert channels_lead([cpu, disk, work]) == disk
    assert channels_lead([cpu, ("disk.busy.vda", "storage", 40.0 / CPU_YIELDS_WITHIN - 1)]) == cpu
    assert channels_lead([work, cpu]) == cpu and channels_lead([work]) == work
    ranks = [naming_rank(*channel) for channel in (("vm.numa_hit", "memory"), ("cpu.busy.cpu0", "cpu"),
                                                   ("mem.Dirty", "memory"))]
    assert ranks == sorted(ranks, reverse=True) and len(set(ranks)) == 3


def test_no_candidates_is_an_error():
    with pytest.raises(ValueError):
        lead([], lambda c: 0, lambda c: 0.0)
