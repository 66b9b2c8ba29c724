"""The decision: how a host's flagged windows become the incidents an operator is paged for, in one place.

Read top to bottom: `settings` (every rule's duration in seconds, the one conversion to window counts), `findings`
(a window's own persisted departures, less those its peers share, grouped into causes), `naming` (the one rule that
names a finding's subsystem), `routing` (which incident each departing channel goes to), `incidents` (open, update,
close and reopen), `regime` (a workload starting or stopping), `peer_effects` (a fault seen on a host's peers is told
with it), and `decision`, which composes them for the cluster stage.
"""

__all__ = ["decision", "findings", "incidents", "naming", "peer_effects", "regime", "routing", "settings"]
