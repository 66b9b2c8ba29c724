"""`reveal agent`: sample this host and publish frames to Kafka."""

from __future__ import annotations

import logging

from producers.agent import Agent, AgentSettings
from producers.publisher import KafkaFramePublisher
from schemas.topics import TopicNames, ensure_topics
from stream_jobs.cli.options import add_kafka_options, StopFlag, positive_seconds

log = logging.getLogger(__name__)


def register(commands) -> None:
    parser = commands.add_parser(
        "agent", help="sample this host and publish frames to Kafka",
        description="Sample this host every --interval seconds and publish each frame to reveal.samples (keyed by "
                    "host) and the channel catalog to reveal.catalog, creating the topics if they are missing.")
    add_kafka_options(parser)
    parser.add_argument("--host", default=None, help="host name to report (default: this machine's name)")
    parser.add_argument("--cluster", default="default", help="cluster name to report (default: default)")
    parser.add_argument("--interval", type=positive_seconds, default=0.1, metavar="S",
                        help="sampling interval in seconds (default: 0.1)")
    parser.add_argument("--duration", type=positive_seconds, default=None, metavar="S",
                        help="stop after this many seconds (default: run until stopped)")
    parser.add_argument("--procfs", default="/proc", help="root of the proc filesystem to read (default: /proc)")
    parser.add_argument("--sysfs", default="/sys", help="root of the sys filesystem to read (default: /sys)")
    parser.set_defaults(handler=handle)


def handle(args) -> int:
    settings = AgentSettings(**({"host": args.host} if args.host else {}), cluster=args.cluster,
                             interval_s=args.interval, procfs=args.procfs, sysfs=args.sysfs)
    log.info("agent: %s; broker %s", settings, args.bootstrap)
    ensure_topics({"bootstrap.servers": args.bootstrap}, TopicNames(args.topic_prefix))
    publisher = KafkaFramePublisher(args.bootstrap, topics=TopicNames(args.topic_prefix))
    agent = Agent(settings, publisher)
    stats = agent.run(StopFlag(args.duration))
    undelivered = publisher.close()
    log.info("agent stopped: %d frames sampled, %d delivered, %d failed, %d undelivered, %d ticks skipped",
             stats.ticks, publisher.stats.delivered, publisher.stats.failed, undelivered, stats.skipped)
    return 1 if undelivered or publisher.stats.failed else 0
