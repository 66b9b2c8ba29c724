"""A fault on one host of a cluster reaches its peers within seconds: the hosts that train with a lossy host wait for
it, the server that receives from a capped client sees its segments arrive out of order. Those effects are real, but
they are the first host's incident, not new ones: an operator paged for each host goes looking on the wrong machines.

An incident of a host's own findings that opens on a host within `within_windows` windows after one of a peer's own
findings or retransmissions opened (and while that one is open) is therefore told as part of the peer's: the first
incident gets an update that names the host and what it showed, and the later incident's own alerts are held back
for as long as it lasts (its anomalies are still stored). A host's loss verdict (retransmissions) is told as a peer's
only when the peer's is a loss verdict too, opened within `loss_within_windows` windows: a lossy link drops the
segments its peers send to it as well, and their evidence climbs more slowly than the lossy host's own; a coincident
blip of another kind on a peer must not hide a lossy link. A network finding on a host within `loss_within_windows`
windows of a peer's loss verdict (from the window it opens) is the loss seen from the other end (segments out of
order, compressed or coalesced ACKs, a receive path that changes while the link drops) and is told with the verdict,
which names the host that lost them. Other incidents that open in the same window on several hosts are each told:
which of them came first cannot be known. An incident leads only while it still shows: one whose last anomalous
window lies more than `within_windows` windows back (held open in case its symptom returns) is over as far as its
peers can tell, and a later incident on a peer is that peer's own.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace

from schemas.records import Alert

HOST_KINDS = frozenset({"anomaly", "retransmissions"})
LOSS = "retransmissions"


class PeerEffects:
    """Tells incidents that open on a host's peers shortly after its own as part of its incident."""

    def __init__(self, within_windows: int = 3, loss_within_windows: int = 10):
        if within_windows < 1 or loss_within_windows < 1:
            raise ValueError(f"within_windows {within_windows} and loss_within_windows {loss_within_windows} must "
                             "be ≥ 1")
        self.within_windows = within_windows
        self.loss_within_windows = loss_within_windows
        self._openings: dict[str, list[tuple[int, str]]] = defaultdict(list)
        self._open: dict[str, Alert] = {}
        self._effects: dict[str, list[str]] = defaultdict(list)
        self._told_with: dict[str, str] = {}

    def told(self, cluster: str, window_id: int | None, alerts: list[Alert],
             last_shown: Mapping[str, int] | None = None) -> list[Alert]:
        """The alerts to publish of those the cluster's window `window_id` raised (None: incidents closed at the end
        of a run, which open nothing). `last_shown` gives the last anomalous window of each open incident by alert
        id; an incident it lacks (or all, without it) counts as showing."""
        published = []
        for alert in sorted(alerts, key=lambda a: a.kind != LOSS):
            if alert.kind not in HOST_KINDS:
                published.append(alert)
            elif alert.alert_id in self._told_with:
                continue  # told with its lead's incident, closed or reopened alike
            else:
                published += self._own(cluster, window_id, alert, last_shown or {})
        return published

    def _own(self, cluster: str, window_id: int | None, alert: Alert, last_shown: Mapping[str, int]) -> list[Alert]:
        follows = alert.state == "open" and window_id is not None
        lead = self._lead(cluster, window_id, alert, last_shown) if follows else None
        if lead is not None:
            self._told_with[alert.alert_id] = lead.alert_id
            self._effects[lead.alert_id].append(f"{alert.host} ({alert.summary})")
            return [self._remember(replace(lead, state="update"))]
        if alert.state == "open" and window_id is not None:
            self._openings[cluster].append((window_id, alert.alert_id))
        return [self._remember(alert)]

    def _lead(self, cluster: str, window_id: int, alert: Alert, last_shown: Mapping[str, int]) -> Alert | None:
        """The latest open incident on another host of the cluster, still showing, that the alert may be told with
        (see _may_lead)."""
        recent = [(opened, alert_id) for opened, alert_id in self._openings[cluster]
                  if window_id - opened <= max(self.within_windows, self.loss_within_windows)]
        self._openings[cluster] = recent
        leads = [self._open[alert_id] for opened, alert_id in sorted(recent, reverse=True)
                 if alert_id in self._open and self._open[alert_id].host != alert.host
                 and last_shown.get(alert_id, window_id) >= window_id - self.within_windows
                 and self._may_lead(self._open[alert_id].kind, alert, window_id - opened)]
        return leads[0] if leads else None

    def _may_lead(self, lead_kind: str, alert: Alert, windows_after: int) -> bool:
        """A host's own finding follows any incident opened 1 to `within_windows` windows before; a loss verdict
        follows a loss verdict opened 1 to `loss_within_windows` windows before, and a network finding one opened up
        to as many windows before, or in the same window."""
        if lead_kind == LOSS and (alert.kind == LOSS or alert.subsystem == "network"):
            return (alert.kind != LOSS or windows_after >= 1) and windows_after <= self.loss_within_windows
        return alert.kind != LOSS and 1 <= windows_after <= self.within_windows

    def _remember(self, alert: Alert) -> Alert:
        """The alert with the peers' effects told so far added to its summary; closed ones are forgotten."""
        effects = self._effects.get(alert.alert_id)
        told = replace(alert, summary=f"{alert.summary}; then on peers: {'; '.join(effects)}") if effects else alert
        if alert.state == "closed":
            self._open.pop(alert.alert_id, None)
            self._effects.pop(alert.alert_id, None)
        else:
            self._open[alert.alert_id] = alert
        return told
