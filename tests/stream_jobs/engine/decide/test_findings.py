"""A host's own findings as the cluster stage tells them: which channels depart, when a run of departures began and
whether a peer's began with it, which persisted channels are the host's own, how they group into causes strongest
first and under which subsystem, how far each lies out, and when a finding opens its incident."""

import numpy as np

from schemas.records import HostWindow, PersistedChannel
from stream_jobs.engine.decide.findings import (causes_strongest_first, departed_since, departing_channels,
                                                departure_of, departure_onset, hold_s, own_departures,
                                                shared_with_peers, window_lead)
from stream_jobs.engine.decide.settings import DecisionSettings

SETTINGS = DecisionSettings()
BRIDGE = 5

NAMES = ("cpu.busy", "mem.dirty", "disk.busy")
CPU, MEMORY, DISK = (PersistedChannel(0, 4.0, "cpu", "mean", 4.0), PersistedChannel(1, 3.0, "memory", "mean", 3.0),
                     PersistedChannel(2, 8.0, "storage", "std", 0.0))


def summary(departures, persisted=()) -> HostWindow:
    """Host h0's window over NAMES: each channel's departure from its band (None: not judged yet)."""
    return HostWindow("h0", "c", 10, 0, 3, 1, NAMES, np.zeros(3), bool(persisted), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                      None if departures is None else np.array(departures, dtype=np.float64), tuple(persisted))


def test_a_clear_level_opens_its_incident_at_once_and_anything_else_holds_a_while():
    clear, weak = SETTINGS.clear_departure, SETTINGS.weak_hold_s
    assert hold_s(clear, "mean", SETTINGS) == hold_s(clear, "residual", SETTINGS) == 0.0
    assert hold_s(clear - 0.1, "mean", SETTINGS) == weak == hold_s(100 * clear, "std", SETTINGS) > 0


def test_channels_out_of_their_band_in_either_direction_depart():
    assert departing_channels(summary([0.5, -1.0, 2.0])) == {"mem.dirty", "disk.busy"}
    assert departing_channels(summary([0.9, -0.9, 0.0])) == frozenset()
    assert departing_channels(summary(None)) == frozenset()


def test_a_run_of_departures_began_where_it_began_across_short_returns_to_the_band():
    departing = {10, 11, 14, 15, 2}
    kept = {window: {"h0": frozenset({"cpu.busy"}) if window in departing else frozenset()} for window in range(30)}
    assert departure_onset(kept, "h0", "cpu.busy", 15, BRIDGE) == 10, "a gap of two windows is bridged, of seven not"
    assert departure_onset(kept, "h0", "cpu.busy", 15 + BRIDGE + 1, BRIDGE) is None
    assert departure_onset(kept, "h1", "cpu.busy", 15, BRIDGE) is None


def test_only_hosts_out_on_one_of_the_channels_since_a_window_can_share_a_departure():
    kept = {5: {"h1": frozenset({"cpu.busy"}), "h2": frozenset()},
            9: {"h1": frozenset(), "h2": frozenset({"disk.busy"}), "h3": frozenset({"cpu.busy", "mem.free"})}}
    assert departed_since(kept, {"cpu.busy"}, 5) == {"h1", "h3"}
    assert departed_since(kept, {"cpu.busy"}, 6) == {"h3"}
    assert departed_since(kept, {"mem.free", "disk.busy"}, 0) == {"h2", "h3"}
    assert departed_since(kept, {"net.rx"}, 0) == set()


def test_a_peer_shares_a_departure_that_began_within_a_few_windows_of_the_hosts():
    def kept_with(peer_onset):
        return {w: {"h0": frozenset({"cpu.busy"}) if w >= 20 else frozenset(),
                    "h1": frozenset({"cpu.busy"}) if peer_onset is not None and w >= peer_onset else frozenset()}
                for w in range(40)}
    window = HostWindow("h0", "c", 30, 0, 3, 1, NAMES, np.zeros(3), True, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                        np.array([4.0, 0.0, 0.0]), (CPU,))
    assert shared_with_peers(kept_with(20 + BRIDGE), window, BRIDGE) == [frozenset({"cpu.busy"})]
    assert shared_with_peers(kept_with(21 + BRIDGE), window, BRIDGE) == [frozenset()]
    assert shared_with_peers(kept_with(None), window, BRIDGE) == [frozenset()]


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
    assert window_lead(window, [CPU, MEMORY]) == MEMORY
    assert window_lead(window, [CPU]) == CPU, "memory out of its band, but told under its own cause"


def window_over(names, departures, persisted) -> HostWindow:
    """Host h0's window over `names`, each channel's departure given."""
    return HostWindow("h0", "c", 10, 0, 3, 1, names, np.zeros(len(names)), True, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                      np.array(departures, dtype=np.float64), tuple(persisted))


# A fork storm's channels: pages reused, forks, and a memory level (persisted, numbers as departures below)
REUSE, FORKS = PersistedChannel(0, 9e4, "memory", "mean", 9e3), PersistedChannel(1, 8e3, "cpu", "mean", 370.0)


def test_memory_work_leads_only_when_nothing_else_is_there():
    names, reuse, forks = ("vm.pgreuse", "cpu.forks", "mem.Committed_AS"), REUSE, FORKS
    held = PersistedChannel(2, 50.0, "memory", "mean", 40.0)
    window = window_over(names, [9e3, 370.0, 40.0], (reuse, forks, held))
    assert window_lead(window, [reuse, forks]) == forks
    assert window_lead(window, [reuse, forks, held]) == forks, "the storm's children commit memory, far nearer"
    far = PersistedChannel(2, 150.0, "memory", "mean", 120.0)
    closer = window_over(names, [9e3, 370.0, 120.0], (reuse, forks, far))
    assert window_lead(closer, [reuse, forks, far]) == far, "within CPU_YIELDS_WITHIN of the forks"
    storm = window_over(names, [9e3, 370.0, 0.0], (reuse, forks))
    assert window_lead(storm, [reuse]) == reuse, "named after what it holds, never after a channel it does not"


def test_memory_work_is_the_cause_of_the_furthest_channel_that_is_not_and_memory_s_alone():
    reuse, forks, free = REUSE, FORKS, PersistedChannel(2, 50.0, "memory", "residual", 40.0)
    window = window_over(("vm.pgreuse", "cpu.forks", "vm.nr_free_pages"), [9e3, 370.0, 40.0], (reuse, forks, free))
    assert causes_strongest_first(window, [reuse, forks, free], set()) == [("cpu", [reuse, forks]), ("memory", [free])]
    assert causes_strongest_first(window, [reuse], set()) == [("memory", [reuse])]
