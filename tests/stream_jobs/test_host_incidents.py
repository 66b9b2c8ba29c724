"""A host's own findings as the cluster stage tells them: which channels depart, when a run of departures began and
whether a peer's began with it, which persisted channels are the host's own, how they group into causes strongest
first and under which subsystem, how far each lies out, and when a finding opens its incident."""

import numpy as np

from schemas.records import HostWindow, PersistedChannel
from stream_jobs.host_incidents import (CLEAR_DEPARTURE, JOIN_WITHIN_WINDOWS, SHARED_WITHIN_WINDOWS, began_together,
                                        cause_key, causes_strongest_first, departed_since, departing_channels,
                                        departure_of, departure_onset, named_subsystem, own_departures, recent_lead,
                                        told_lead, windows_to_open)

NAMES = ("cpu.busy", "mem.dirty", "disk.busy")
CPU, MEMORY, DISK = (PersistedChannel(0, 4.0, "cpu", "mean", 4.0), PersistedChannel(1, 3.0, "memory", "mean", 3.0),
                     PersistedChannel(2, 8.0, "storage", "std", 0.0))


def summary(departures, persisted=()) -> HostWindow:
    """Host h0's window over NAMES: each channel's departure from its band (None: not judged yet)."""
    return HostWindow("h0", "c", 10, 0, 3, 1, NAMES, np.zeros(3), bool(persisted), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                      None if departures is None else np.array(departures, dtype=np.float64), tuple(persisted))


def test_a_clear_level_opens_its_incident_at_once_and_anything_else_waits_a_second_window():
    assert windows_to_open(CLEAR_DEPARTURE) == windows_to_open(CLEAR_DEPARTURE, "residual") == 1
    assert windows_to_open(CLEAR_DEPARTURE - 0.1) == 2 and windows_to_open(100 * CLEAR_DEPARTURE, "std") == 2


def test_channels_out_of_their_band_in_either_direction_depart():
    assert departing_channels(summary([0.5, -1.0, 2.0])) == {"mem.dirty", "disk.busy"}
    assert departing_channels(summary([0.9, -0.9, 0.0])) == frozenset()
    assert departing_channels(summary(None)) == frozenset()


def test_a_run_of_departures_began_where_it_began_across_short_returns_to_the_band():
    departing = {10, 11, 14, 15, 2}
    kept = {window: {"h0": frozenset({"cpu.busy"}) if window in departing else frozenset()} for window in range(30)}
    assert departure_onset(kept, "h0", "cpu.busy", 15) == 10, "a gap of two windows is bridged, one of seven is not"
    assert departure_onset(kept, "h0", "cpu.busy", 15 + SHARED_WITHIN_WINDOWS + 1) is None
    assert departure_onset(kept, "h1", "cpu.busy", 15) is None


def test_only_hosts_out_on_one_of_the_channels_since_a_window_can_share_a_departure():
    kept = {5: {"h1": frozenset({"cpu.busy"}), "h2": frozenset()},
            9: {"h1": frozenset(), "h2": frozenset({"disk.busy"}), "h3": frozenset({"cpu.busy", "mem.free"})}}
    assert departed_since(kept, {"cpu.busy"}, 5) == {"h1", "h3"}
    assert departed_since(kept, {"cpu.busy"}, 6) == {"h3"}
    assert departed_since(kept, {"mem.free", "disk.busy"}, 0) == {"h2", "h3"}
    assert departed_since(kept, {"net.rx"}, 0) == set()


def test_departures_began_together_when_their_onsets_lie_within_a_few_windows():
    assert began_together(10 + SHARED_WITHIN_WINDOWS, 10) and began_together(10 - SHARED_WITHIN_WINDOWS, 10)
    assert not began_together(11 + SHARED_WITHIN_WINDOWS, 10) and not began_together(None, 10)


def test_a_persisted_channel_a_peer_left_its_band_on_too_is_not_the_hosts_own():
    window = summary([4.0, 3.0, 0.5], (CPU, MEMORY))
    assert own_departures(window, [frozenset({"cpu.busy"}), frozenset()]) == [MEMORY]
    assert own_departures(window, []) == [CPU, MEMORY], "without peers every persisted channel is the host's own"
    assert own_departures(summary(None, (CPU,)), []) == [] and own_departures(summary([0, 0, 0]), []) == []


def test_causes_are_told_strongest_first_each_with_its_channels_furthest_first():
    window = summary([4.0, 3.0, -9.0], (CPU, MEMORY, DISK))
    assert departure_of(window, DISK) == 9.0 and departure_of(window, CPU) == 4.0
    assert causes_strongest_first(window, [MEMORY, DISK], {"cpu"}) == [("storage", [DISK]), ("memory", [MEMORY]),
                                                                       ("cpu", [])]


def test_cpu_time_that_moves_with_another_subsystem_is_told_under_the_other():
    window = summary([4.0, 3.0, 0.0], (CPU, MEMORY))
    assert named_subsystem(window, [CPU, MEMORY]) == "memory"
    assert named_subsystem(window, [CPU]) == "cpu", "memory out of its band, but told under its own cause"


def window_over(names, departures, persisted) -> HostWindow:
    """Host h0's window over `names`, each channel's departure given."""
    return HostWindow("h0", "c", 10, 0, 3, 1, names, np.zeros(len(names)), True, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                      np.array(departures, dtype=np.float64), tuple(persisted))


# A fork storm's channels: pages reused, forks, and a memory level (persisted, numbers as departures below)
REUSE, FORKS = PersistedChannel(0, 9e4, "memory", "mean", 9e3), PersistedChannel(1, 8e3, "cpu", "mean", 370.0)


def test_memory_work_is_told_under_what_moves_with_it_and_under_memory_alone():
    names, reuse, forks = ("vm.pgreuse", "cpu.forks", "mem.Committed_AS"), REUSE, FORKS
    held = PersistedChannel(2, 50.0, "memory", "mean", 40.0)
    window = window_over(names, [9e3, 370.0, 40.0], (reuse, forks, held))
    assert named_subsystem(window, [reuse, forks]) == "cpu"
    assert named_subsystem(window, [reuse, forks, held]) == "cpu", "the storm's children commit memory, far nearer"
    far = PersistedChannel(2, 150.0, "memory", "mean", 120.0)
    closer = window_over(names, [9e3, 370.0, 120.0], (reuse, forks, far))
    assert named_subsystem(closer, [reuse, forks, far]) == "memory", "within CPU_YIELDS_WITHIN of the forks"
    storm, alone = (window_over(names, [9e3, 370.0, 0.0], persisted) for persisted in ((reuse, forks), (reuse,)))
    assert named_subsystem(storm, [reuse]) == "cpu", "the forks of the same window are what it is the work of"
    assert named_subsystem(alone, [reuse]) == "memory"
    assert told_lead(window, [reuse, forks, held], "memory") == ("mem.Committed_AS", "mean", 50.0)


def test_memory_work_is_the_cause_of_the_furthest_channel_that_is_not_and_memory_s_alone():
    reuse, forks, free = REUSE, FORKS, PersistedChannel(2, 50.0, "memory", "residual", 40.0)
    window = window_over(("vm.pgreuse", "cpu.forks", "vm.nr_free_pages"), [9e3, 370.0, 40.0], (reuse, forks, free))
    assert causes_strongest_first(window, [reuse, forks, free], set()) == [("cpu", [reuse, forks]), ("memory", [free])]
    assert causes_strongest_first(window, [reuse], set()) == [("memory", [reuse])]


def test_a_new_cause_joins_the_incident_that_began_last_if_it_began_a_few_windows_before():
    began = {"cpu": 10, "memory": 12}
    assert recent_lead(began, 12 + JOIN_WITHIN_WINDOWS) == "memory"
    assert recent_lead(began, 13 + JOIN_WITHIN_WINDOWS) is None and recent_lead({}, 12) is None
    assert cause_key("h0", "memory") == "h0/anomaly:memory"
