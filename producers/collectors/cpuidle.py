"""Residency and entry counts of every idle state of every CPU, from cpuidle in sysfs."""

from __future__ import annotations

from producers.collectors.base import SysfsFilesCollector
from producers.collectors.cpufreq import CPU_ROOT
from producers.collectors.sysfs_names import numbered_directories, qualified_where_repeated, read_label, sanitised
from schemas.agent_records import Channel


class CpuIdleCollector(SysfsFilesCollector):
    """cpu.cstate_time_us.<state>.cpuN (µs spent in the state) and cpu.cstate_entries.<state>.cpuN (entries).

    State names come from each state's `name` file (POLL, C1, C1E, C6, "haltpoll idle"), lower-cased and sanitised;
    a state without a readable name is called stateK.
    """

    source = "/sys/devices/system/cpu/cpu*/cpuidle"
    default_interval_s = 1.0

    def discover(self):
        for cpu in numbered_directories(self.sysfs / CPU_ROOT, "cpu"):
            states = numbered_directories(cpu / "cpuidle", "state")
            names = qualified_where_repeated([state_name(state) for state in states], [s.name for s in states])
            for state, name in zip(states, names):
                yield (Channel(f"cpu.cstate_time_us.{name}.{cpu.name}", "cpu", "counter", "us", cpu.name),
                       state / "time", 1.0)
                yield (Channel(f"cpu.cstate_entries.{name}.{cpu.name}", "cpu", "counter", "entries", cpu.name),
                       state / "usage", 1.0)


def state_name(state) -> str:
    """The sanitised name of an idle state, or its directory name when the name file says nothing usable."""
    return sanitised(read_label(state / "name") or "") or state.name
