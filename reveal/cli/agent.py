"""`reveal agent`: sample this host and publish frames to Kafka."""

from __future__ import annotations

import logging

from pathlib import Path

from producers.agent import Agent, FanOutSink
from producers.publisher import KafkaFramePublisher
from schemas.topics import BrokerUnavailable, TopicNames, ensure_topics
from reveal.cli.options import (StopFlag, add_agent_options, add_kafka_options, agent_settings, kafka_security,
                                     listen_address, output_file, positive_count, positive_seconds,
                                     writable_folder)

log = logging.getLogger(__name__)

START_WAIT_S = 5.0


def register(commands) -> None:
    parser = commands.add_parser(
        "agent", help="sample this host and publish frames to Kafka",
        description="Sample this host every --interval seconds and publish each frame to reveal.samples (keyed by "
                    "host) and the channel catalog to reveal.catalog, creating the topics if they are missing.")
    add_kafka_options(parser)
    add_agent_options(parser)
    parser.add_argument("--duration", type=positive_seconds, default=None, metavar="S",
                        help="stop after this many seconds (default: run until stopped)")
    parser.add_argument("--spool-dir", type=writable_folder, default=None, metavar="DIR",
                        help="where frames wait on disk while Kafka is unreachable (default: "
                             "~/.cache/reveal/spool/HOST)")
    parser.add_argument("--spool-max-mb", type=positive_count, default=256, metavar="MB",
                        help="spool size limit; beyond it the oldest frames are dropped and counted (default: 256)")
    parser.add_argument("--no-spool", action="store_true", help="keep frames only in the Kafka client's memory")
    parser.add_argument("--record", type=output_file(".avro"), default=None, metavar="FILE.avro",
                        help="also record every frame and catalog to this Avro file, as 'reveal collect' does")
    parser.add_argument("--metrics-listen", type=listen_address, default=None, metavar="HOST:PORT",
                        help="serve the agent's health (ticks, lag, channels, frames sent, spooled and dropped, "
                             "per-source reads, failures and read time) for Prometheus at http://HOST:PORT/metrics "
                             "(default: off)")
    parser.add_argument("--metrics-channels", action="store_true",
                        help="with --metrics-listen: also serve every channel's latest value as "
                             "reveal_channel{channel,subsystem,kind,unit,device}, for an existing Prometheus")
    parser.set_defaults(handler=handle)


def handle(args) -> int:
    settings = agent_settings(args)
    spool_dir = None if args.no_spool else (args.spool_dir or Path.home() / ".cache" / "reveal" / "spool" / settings.host)
    log.info("agent: %s; broker %s; spool %s", settings, args.bootstrap, spool_dir or "off")
    security = kafka_security(args)
    admin = {"bootstrap.servers": args.bootstrap, "log_level": 0, **security.client_config()}
    topics = TopicNames(args.topic_prefix)
    reachable = _topics_ready(admin, topics, spool_dir)
    publisher = KafkaFramePublisher(args.bootstrap, extra_config=security.client_config(), topics=topics,
                                    spool_dir=spool_dir, spool_max_bytes=args.spool_max_mb << 20,
                                    start_spooling=not reachable,
                                    before_replay=None if reachable else lambda: ensure_topics(admin, topics),
                                    frames_per_message=max(1, settings.ticks_per_block))
    recording = None
    if args.record:
        from producers.recording import RecordingWriter  # fastavro's container writer only when recording

        recording = RecordingWriter(args.record)
    agent = Agent(settings, FanOutSink(publisher, recording) if recording else publisher)
    metrics = None
    if args.metrics_listen:
        from producers.metrics import AgentMetrics, serve_metrics  # the Prometheus client only when served

        metrics = serve_metrics(AgentMetrics(agent, publisher, args.metrics_channels), args.metrics_listen)
    try:
        stats = agent.run(StopFlag(args.duration))
    finally:
        agent.close()
        if recording is not None:
            recording.close()
    undelivered = publisher.close()
    if metrics is not None:
        metrics.shutdown()
    log.info("agent stopped: %d frames sampled, %d delivered, %d failed, %d undelivered, %d ticks skipped",
             stats.ticks, publisher.stats.delivered, publisher.stats.failed, undelivered, stats.skipped)
    return 1 if undelivered or publisher.stats.failed else 0


def _topics_ready(admin: dict, topics: TopicNames, spool_dir: Path | None) -> bool:
    """Create the topics if the broker answers within START_WAIT_S; when it does not, an agent with a spool samples
    anyway (its frames wait in the spool, the topics are made when the broker first answers) and one without fails."""
    try:
        ensure_topics(admin, topics, timeout_s=START_WAIT_S)
    except BrokerUnavailable as error:
        if spool_dir is None:
            raise
        log.warning("Kafka at %s did not answer within %.0f s: sampling goes on, frames wait in the spool %s and "
                    "are sent in order once it answers", admin["bootstrap.servers"], START_WAIT_S, spool_dir)
        return False
    return True
