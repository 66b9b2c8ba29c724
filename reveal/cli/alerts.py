"""`reveal alerts`: print incidents from reveal.alerts, or forward them to a webhook (Alertmanager or Slack)."""

from __future__ import annotations

import argparse
import logging
import sys
import uuid
from urllib.parse import urlparse

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaException, TopicPartition

from schemas.topics import BrokerUnavailable, TopicNames
from reveal.alert_routing import (PAYLOADS, AlertFilter, EventLedger, WebhookRefused, WebhookSender,
                                       describe)
from reveal.cli.options import StopFlag, add_kafka_options, kafka_security, positive_seconds
from stream_jobs.engine.severity import CRITICAL_AT

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 10.0


def register(commands) -> None:
    parser = commands.add_parser(
        "alerts", help="print incidents from reveal.alerts, or forward them to a webhook",
        description="Read the incidents the workers publish to reveal.alerts (each opened, updated while it lasts, "
                    "closed when it ends). Without --webhook, print them one line each: what the topic holds, "
                    "then, with --follow, new ones as they come. With --webhook URL, post each event to URL as "
                    "Alertmanager's webhook JSON or as a Slack message, once per event: a receiver that is down is "
                    "retried until it answers, and a consumer group remembers what was delivered across restarts.")
    add_kafka_options(parser)
    parser.add_argument("--follow", action="store_true",
                        help="keep printing new alerts until stopped (default: print what the topic holds and exit)")
    parser.add_argument("--from-beginning", action="store_true",
                        help="--follow and --webhook: start from the oldest alert the topic keeps (default: "
                             "new ones only; a webhook group resumes where it left off)")
    parser.add_argument("--cluster", default="", metavar="NAME", help="only this cluster's alerts (default: all)")
    parser.add_argument("--min-severity", type=severity, default=0.0, metavar="S",
                        help="only alert events of at least this severity, on Reveal's 1–10 scale (1 at the band's edge, one "
                             "more per doubling; 4 major, 7 critical; default: 0, all)")
    parser.add_argument("--webhook", type=webhook_url, default=None, metavar="URL",
                        help="post each alert event to this http(s) URL instead of printing it")
    parser.add_argument("--webhook-format", choices=sorted(PAYLOADS), default="alertmanager",
                        help="alertmanager: Alertmanager's webhook JSON (version 4), one alert per post, "
                             "fingerprinted by incident, for webhook receivers; alertmanager-api: the alert posted to "
                             "Alertmanager itself, URL http://ALERTMANAGER:9093/api/v2/alerts (as Prometheus does; "
                             "closed incidents resolve it); slack: a Slack incoming-webhook message (default: "
                             "alertmanager)")
    parser.add_argument("--critical-at", type=severity, default=CRITICAL_AT, metavar="S",
                        help=f"severity from which an alert is labelled critical rather than warning (default: "
                             f"{CRITICAL_AT:g}, Reveal's own 'critical')")
    parser.add_argument("--group", default="reveal-alerts-webhook", metavar="GROUP",
                        help="--webhook: the consumer group that remembers what was delivered (default: "
                             "reveal-alerts-webhook)")
    parser.add_argument("--duration", type=positive_seconds, default=None, metavar="S",
                        help="--follow and --webhook: stop after this many seconds (default: run until stopped)")
    parser.set_defaults(handler=handle)


def severity(text: str) -> float:
    """A severity on the 1–10 scale: a number of at least 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number ≥ 0")
    return value


def webhook_url(text: str) -> str:
    """An http(s) URL with a host."""
    parsed = urlparse(text)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise argparse.ArgumentTypeError(f"{text!r} must be an http:// or https:// URL with a host")
    return text


def handle(args) -> int:
    topic = TopicNames(args.topic_prefix).alerts
    config = {"bootstrap.servers": args.bootstrap, "log_level": 0, "enable.auto.commit": False,
              **kafka_security(args).client_config()}
    wanted = AlertFilter(args.cluster, args.min_severity)
    if args.webhook:
        return forward(args, config, topic, wanted)
    return print_alerts(args, config, topic, wanted)


def print_alerts(args, config: dict, topic: str, wanted: AlertFilter) -> int:
    """Print the topic's alerts (from the oldest, or only new ones with --follow) one line each."""
    consumer = Consumer({**config, "group.id": f"reveal-alerts-{uuid.uuid4().hex[:12]}"})
    try:
        partitions = _partitions(consumer, topic, args.bootstrap)
        start = OFFSET_END if args.follow and not args.from_beginning else OFFSET_BEGINNING
        consumer.assign([TopicPartition(topic, p, start) for p in partitions])
        ends = {} if args.follow else {p: consumer.get_watermark_offsets(TopicPartition(topic, p),
                                                                        timeout=CONNECT_TIMEOUT_S)[1]
                                       for p in partitions}
        stop = StopFlag(args.duration if args.follow else None)
        done = {p for p, end in ends.items() if end == 0}
        while not stop() and (args.follow or len(done) < len(ends)):
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            alert = _decoded(message)
            if alert is not None and wanted.wants(alert):
                print(describe(alert), flush=True)
            if not args.follow and message.offset() + 1 >= ends[message.partition()]:
                done.add(message.partition())
    finally:
        consumer.close()
    return 0


def forward(args, config: dict, topic: str, wanted: AlertFilter) -> int:
    """Post each wanted alert event to the webhook once, committing each record only after it is posted."""
    consumer = Consumer({**config, "group.id": args.group,
                         "auto.offset.reset": "earliest" if args.from_beginning else "latest"})
    sender, ledger, payload = WebhookSender(args.webhook), EventLedger(), PAYLOADS[args.webhook_format]
    stop = StopFlag(args.duration)
    refused = 0
    try:
        _partitions(consumer, topic, args.bootstrap)
        consumer.subscribe([topic])
        log.info("alerts: forwarding %s to %s as %s", topic, args.webhook, args.webhook_format)
        while not stop():
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            alert = _decoded(message)
            if alert is not None and wanted.wants(alert) and ledger.is_new(alert):
                try:
                    if not sender.post(payload(alert, args.critical_at), stop):
                        break  # stopped while the receiver was down: the record stays uncommitted
                except WebhookRefused as error:
                    refused += 1
                    log.error("%s; incident %s %s skipped", error, alert.alert_id, alert.state)
                ledger.remember(alert)
            consumer.commit(message, asynchronous=False)
    finally:
        consumer.close()
    log.info("alerts: %d events delivered, %d retries, %d refused by the receiver", sender.delivered,
             sender.retries, refused)
    return 1 if refused else 0


def _partitions(consumer: Consumer, topic: str, bootstrap: str) -> list[int]:
    """The topic's partitions; a broker that does not answer or a topic that does not exist is a clear error."""
    try:
        metadata = consumer.list_topics(topic, timeout=CONNECT_TIMEOUT_S)
    except KafkaException as error:
        raise BrokerUnavailable(f"Kafka at {bootstrap} did not answer within {CONNECT_TIMEOUT_S:.0f} s ({error}); "
                                "is the broker running (infra/kafka/start.sh)?") from None
    found = metadata.topics.get(topic)
    if found is None or found.error is not None or not found.partitions:
        from reveal.cli import CommandError

        raise CommandError(f"no topic {topic} at {bootstrap}: a reveal worker creates it (check --topic-prefix)")
    return sorted(found.partitions)


def _decoded(message):
    """The alert a record holds, or None (told once per record) when it does not decode."""
    from schemas.records import decode_alert  # fastavro, loaded once the command reads alerts

    try:
        return decode_alert(message.value())
    except Exception as error:  # a foreign or corrupt record: told, skipped, left on the topic
        print(f"reveal alerts: record {message.partition()}:{message.offset()} is not an alert ({error}); skipped",
              file=sys.stderr)
        return None
