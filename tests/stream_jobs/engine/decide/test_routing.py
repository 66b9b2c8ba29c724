"""Routing a host's departing channels: one incident per fault, though it reaches several subsystems."""

from schemas.records import PersistedChannel
from stream_jobs.engine.decide.incidents import IncidentTracker
from stream_jobs.engine.decide.routing import CauseRouter, cause_key
from stream_jobs.engine.decide.settings import DecisionSettings

NAMES = ("disk.busy.vda", "mem.Dirty", "cpu.busy.cpu0")
DISK, DIRTY, CPU = (PersistedChannel(0, 9.0, "storage", "mean", 9.0), PersistedChannel(1, 4.0, "memory", "mean", 4.0),
                    PersistedChannel(2, 3.0, "cpu", "mean", 3.0))


def test_a_cause_that_departs_within_join_within_joins_the_incident_that_began_and_a_later_one_is_its_own():
    tracker = IncidentTracker(DecisionSettings())
    router = CauseRouter(tracker, join_within=3)
    first = router.routed("h0", 10, NAMES, [("storage", [DISK])])
    tracker.update(cause_key("h0", "storage"), 10, 7, 10, True, 9.0, "storage", [("disk.busy.vda", "mean", 9.0)])
    assert first == {"storage": [DISK]}
    joined = router.routed("h0", 13, NAMES, [("storage", [DISK]), ("memory", [DIRTY])])
    assert joined == {"storage": [DISK, DIRTY]}, "the dirty pages of the same writes"
    assert router.routed("h0", 30, NAMES, [("storage", [DISK]), ("memory", [DIRTY]), ("cpu", [CPU])]) == \
        {"storage": [DISK, DIRTY], "cpu": [CPU]}, "a channel that joined stays; a later cause is its own"
    assert cause_key("h0", "memory") == "h0/anomaly:memory"
