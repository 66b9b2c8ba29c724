"""Alert routing: what `reveal alerts` prints, the JSON it posts to a webhook, and how it posts it.

An incident reaches a receiver as Alertmanager's webhook payload (version 4, one alert, its fingerprint the
incident's id, so Alertmanager-style receivers group and deduplicate it), as an alert posted to Alertmanager's own
API (/api/v2/alerts, as Prometheus does), or as a Slack incoming-webhook message.
Each event (open, update, closed) is posted once: a repeat of an event already posted (a record read again after a
restart, a duplicate on the topic) is dropped, and a receiver that is down is retried with growing waits until it
answers, so an outage delays alerts and loses none.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable

from stream_jobs.engine.severity import CRITICAL_AT, severity_word

if TYPE_CHECKING:  # the records' codecs (fastavro) stay out of commands that only parse their options
    from schemas.records import Alert

__all__ = ["AlertFilter", "EventLedger", "WebhookSender", "WebhookRefused", "alertmanager_api_payload",
           "alertmanager_payload", "describe", "slack_payload", "PAYLOADS"]

log = logging.getLogger(__name__)

ALERTNAME = "RevealIncident"
NEVER = "0001-01-01T00:00:00Z"  # Alertmanager's "no end yet"


@dataclass(frozen=True)
class AlertFilter:
    """Which alert events an operator wants: of one cluster (empty: all), at or above a severity (1–10, see
    stream_jobs/engine/severity.py)."""

    cluster: str = ""
    min_severity: float = 0.0

    def wants(self, alert: Alert) -> bool:
        return (not self.cluster or alert.cluster == self.cluster) and alert.severity >= self.min_severity


def iso_utc(timestamp_ns: int) -> str:
    return datetime.fromtimestamp(timestamp_ns / 1e9, timezone.utc).isoformat(timespec="milliseconds") \
        .replace("+00:00", "Z")


def describe(alert: Alert) -> str:
    """One alert event as one line for a terminal."""
    words = (f"{iso_utc(alert.end_ns)} {alert.state.upper():<6} [{alert.kind}/{alert.subsystem or '-'}] "
             f"{alert.cluster}/{alert.host} severity {alert.severity:.1f} ({severity_word(alert.severity)}): {alert.summary}")
    return words + (f" — hint: {alert.hint}" if alert.hint else "") + f" ({alert.alert_id})"


def severity_label(severity: float, critical_at: float) -> str:
    """Alertmanager's usual labels: critical from `critical_at`, else warning."""
    return "critical" if severity >= critical_at else "warning"


def alert_labels(alert: Alert, critical_at: float) -> dict[str, str]:
    """The labels an incident is known by in Alertmanager: its id, where, what, and how serious."""
    return {"alertname": ALERTNAME, "incident": alert.alert_id, "host": alert.host, "cluster": alert.cluster,
            "subsystem": alert.subsystem, "kind": alert.kind, "severity": severity_label(alert.severity, critical_at)}


def alert_annotations(alert: Alert) -> dict[str, str]:
    return {"summary": alert.summary, "description": alert.hint, "reveal_state": alert.state,
            "reveal_severity": f"{alert.severity:.2f}"}


def alertmanager_payload(alert: Alert, critical_at: float = CRITICAL_AT) -> dict:
    """Alertmanager's webhook payload (version 4) for one incident event; `closed` is `resolved`."""
    status = "resolved" if alert.state == "closed" else "firing"
    labels, annotations = alert_labels(alert, critical_at), alert_annotations(alert)
    body = {"status": status, "labels": labels, "annotations": annotations, "startsAt": iso_utc(alert.start_ns),
            "endsAt": iso_utc(alert.end_ns) if status == "resolved" else NEVER, "generatorURL": "",
            "fingerprint": hashlib.sha256(alert.alert_id.encode()).hexdigest()[:16]}
    return {"version": "4", "groupKey": f"{{}}:{{incident=\"{alert.alert_id}\"}}", "truncatedAlerts": 0,
            "status": status, "receiver": "reveal", "groupLabels": {"incident": alert.alert_id},
            "commonLabels": labels, "commonAnnotations": annotations, "externalURL": "", "alerts": [body]}


def alertmanager_api_payload(alert: Alert, critical_at: float = CRITICAL_AT) -> list[dict]:
    """One incident event as Alertmanager's own API takes it (POST /api/v2/alerts, as Prometheus sends): a firing
    alert has no end (Alertmanager keeps it for its resolve_timeout after the last event), a closed one ends when
    the incident did. Empty labels are left out: Alertmanager treats them as absent."""
    labels = {name: value for name, value in alert_labels(alert, critical_at).items() if value}
    body = {"labels": labels, "annotations": alert_annotations(alert), "startsAt": iso_utc(alert.start_ns),
            "generatorURL": ""}
    if alert.state == "closed":
        body["endsAt"] = iso_utc(alert.end_ns)
    return [body]


def slack_payload(alert: Alert, critical_at: float = CRITICAL_AT) -> dict:
    """A Slack incoming-webhook message for one incident event."""
    icon = {"open": ":rotating_light:", "update": ":warning:", "closed": ":white_check_mark:"}.get(alert.state, "")
    lines = [f"{icon} *{alert.state}* {severity_label(alert.severity, critical_at)} "
             f"[{alert.kind}/{alert.subsystem or '-'}] `{alert.cluster}/{alert.host}` severity {alert.severity:.1f}",
             alert.summary]
    if alert.hint:
        lines.append(f"_hint:_ {alert.hint}")
    lines.append(f"incident `{alert.alert_id}` since {iso_utc(alert.start_ns)}")
    return {"text": "\n".join(lines)}


PAYLOADS: dict[str, Callable[[Alert, float], dict | list]] = {
    "alertmanager": alertmanager_payload, "alertmanager-api": alertmanager_api_payload, "slack": slack_payload}


class EventLedger:
    """The incident events already posted, so a repeat is posted never; remembers the latest `capacity` events."""

    def __init__(self, capacity: int = 100_000):
        self.capacity = capacity
        self._seen: OrderedDict[tuple, None] = OrderedDict()

    @staticmethod
    def key(alert: Alert) -> tuple:
        return alert.alert_id, alert.state, alert.end_ns, alert.summary

    def is_new(self, alert: Alert) -> bool:
        return self.key(alert) not in self._seen

    def remember(self, alert: Alert) -> None:
        self._seen[self.key(alert)] = None
        while len(self._seen) > self.capacity:
            self._seen.popitem(last=False)


class WebhookRefused(RuntimeError):
    """The receiver answered that it will never take this payload (a 4xx other than 408 and 429)."""


class WebhookSender:
    """Posts JSON to one URL; while the receiver is unreachable or answers 5xx, 408 or 429, waits and tries again
    (0.5 s doubling to `max_wait_s`) until it takes the payload or `should_stop()`."""

    def __init__(self, url: str, timeout_s: float = 10.0, max_wait_s: float = 30.0,
                 sleep: Callable[[float], None] = time.sleep):
        self.url, self.timeout_s, self.max_wait_s, self._sleep = url, timeout_s, max_wait_s, sleep
        self.delivered = 0
        self.retries = 0

    def post(self, payload: dict | list, should_stop: Callable[[], bool] = lambda: False) -> bool:
        """True once delivered; False if told to stop first. Raises WebhookRefused for a permanent refusal."""
        wait, failing_since = 0.5, None
        while True:
            problem = self._try(payload)
            if problem is None:
                if failing_since is not None:
                    log.warning("webhook %s answers again after %.1f s", self.url, time.monotonic() - failing_since)
                self.delivered += 1
                return True
            if failing_since is None:
                failing_since = time.monotonic()
                log.warning("webhook %s: %s; retrying until it answers", self.url, problem)
            if should_stop():
                return False
            self.retries += 1
            self._sleep(wait)
            wait = min(wait * 2, self.max_wait_s)

    def _try(self, payload: dict | list) -> str | None:
        import urllib.error  # the HTTP client (and its TLS) only in a process that posts: never the agent's
        import urllib.request

        request = urllib.request.Request(self.url, json.dumps(payload).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                response.read()
        except urllib.error.HTTPError as error:
            if 400 <= error.code < 500 and error.code not in (408, 429):
                raise WebhookRefused(f"webhook {self.url} refused the alert: HTTP {error.code} {error.reason}") \
                    from None
            return f"HTTP {error.code} {error.reason}"
        except (urllib.error.URLError, OSError) as error:
            return str(getattr(error, "reason", error))
        return None
