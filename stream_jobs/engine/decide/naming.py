"""The one rule that names a finding's subsystem, for a window's channels and for an incident's windows alike.

A finding is named after its lead: the strongest candidate of the lowest rank, where a subsystem's state ranks first,
CPU time second and memory work (see counts_page_work) last. CPU time is how most faults show (reclaim's system time
under memory pressure, I/O wait under a write burst), so it yields to a state that lies within CPU_YIELDS_WITHIN of
it; memory work moves with whatever runs, so it leads only when nothing else is there. The lead is always one of the
candidates, so a finding is never named after a subsystem none of its evidence belongs to.
"""

from __future__ import annotations

from typing import Callable, Sequence, TypeVar

from schemas.channels import CPU, counts_page_work

# CPU time leads a state only when it lies more than this many times as far out (two steps of the severity scale): a
# CPU burner's new processes commit a little memory too, while a write burst's disk lies far beyond its I/O wait.
CPU_YIELDS_WITHIN = 4.0
STATE, CPU_TIME, MEMORY_WORK = 0, 1, 2

Candidate = TypeVar("Candidate")


def naming_rank(channel: str, subsystem: str) -> int:
    """STATE for a channel that tells its subsystem's state, CPU_TIME for CPU, MEMORY_WORK for memory work."""
    return MEMORY_WORK if counts_page_work(channel) else CPU_TIME if subsystem == CPU else STATE


def lead(candidates: Sequence[Candidate], rank: Callable[[Candidate], int],
         strength: Callable[[Candidate], float]) -> Candidate:
    """The candidate a finding is named after (see the module's rule); candidates come strongest first among equals."""
    if not candidates:
        raise ValueError("a finding without candidates has no lead")
    best = {}
    for candidate in candidates:
        kind = rank(candidate)
        if kind not in best or strength(candidate) > strength(best[kind]):
            best[kind] = candidate
    state, cpu = best.get(STATE), best.get(CPU_TIME)
    if state is not None and cpu is not None and strength(cpu) > CPU_YIELDS_WITHIN * strength(state):
        return cpu
    return best[min(best)]
