"""`reveal worker`: a Faust stream worker that consumes frames, detects anomalies and stores everything."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
import time

from schemas.topics import TopicNames, ensure_topics
from reveal.cli.options import (DSN_HELP, add_engine_options, add_kafka_options, add_retention_options,
                                apply_retention, claim_data_folder, clickhouse_dsn, embedded_data_folder,
                                engine_settings, kafka_security, listen_address, positive_count, positive_seconds)

log = logging.getLogger(__name__)


def register(commands) -> None:
    parser = commands.add_parser(
        "worker", help="consume frames from Kafka, detect anomalies, store in ClickHouse",
        description="Run a Faust stream worker: it reads reveal.catalog and reveal.samples, windows each host's "
                    "frames, scores the windows, publishes anomalies to reveal.anomalies, sends undecodable records "
                    "to reveal.deadletter with a reason, and stores frames, windows and anomalies in ClickHouse. "
                    "Stopped with SIGTERM or Ctrl-C it writes what it holds and leaves open incidents open, for "
                    "the worker that takes its hosts over; at the end of --duration or --until-idle it closes "
                    "them, since the run is over.")
    add_kafka_options(parser)
    parser.add_argument("--clickhouse", required=True, metavar="DSN",
                        help=DSN_HELP)
    parser.add_argument("--database", default="reveal", help="ClickHouse database (default: reveal)")
    parser.add_argument("--group", default="reveal-worker",
                        help="consumer group and Faust app id; workers sharing it split the hosts (default: "
                             "reveal-worker)")
    parser.add_argument("--duration", type=positive_seconds, default=None, metavar="S",
                        help="stop after this many seconds (default: run until stopped)")
    parser.add_argument("--until-idle", type=positive_seconds, default=None, metavar="S",
                        help="stop once no record has arrived for this many seconds and none waits unread in the "
                             "worker's partitions (for replays and batch runs)")
    parser.add_argument("--max-pending-rows", type=positive_count, default=50_000, metavar="N",
                        help="rows queued for ClickHouse at most; while it is unavailable and the queue is full, "
                             "consumption pauses (back-pressure, nothing dropped) (default: 50000)")
    parser.add_argument("--storage-retry-max", type=positive_seconds, default=30.0, metavar="S",
                        help="longest wait between attempts while ClickHouse refuses inserts; waits start at 0.5 s "
                             "and double (default: 30)")
    parser.add_argument("--metrics-listen", type=listen_address, default=None, metavar="HOST:PORT",
                        help="serve the worker's health (records, frames, windows, anomalies, open incidents, "
                             "storage queue and errors, consumer lag per partition, dead letters) for Prometheus at "
                             "http://HOST:PORT/metrics (default: off)")
    parser.add_argument("--listen", type=listen_address, default=("127.0.0.1", 0), metavar="HOST:PORT",
                        help="with an embedded --clickhouse chdb:///DIR/clickhouse: where the worker answers "
                             "read-only queries for DIR, so reveal sql --data-dir DIR and reveal report --data-dir DIR "
                             "work while it runs (default: 127.0.0.1:0, a free port)")
    add_engine_options(parser)
    add_retention_options(parser)
    parser.set_defaults(handler=handle)


def handle(args) -> int:
    engine, security = engine_settings(args), kafka_security(args)  # a mistake is told before the imports below
    dsn = clickhouse_dsn(args.clickhouse)
    folder = embedded_data_folder(dsn)

    import faust

    from producers.metrics import serve_metrics
    from sinks.clickhouse import describe_dsn
    from sinks.landing import open_landing
    from stream_jobs.catalog_preload import read_catalogs
    from stream_jobs.engine.ensemble import load_fitting
    from stream_jobs.worker.app import create_app
    from stream_jobs.worker.metrics import WorkerMetrics
    from stream_jobs.worker.shell import WorkerSettings, WorkerShell

    settings = WorkerSettings(args.bootstrap, args.group, engine, TopicNames(args.topic_prefix),
                              security=security, storage_retry_max_s=args.storage_retry_max)
    if folder is not None:
        claim_data_folder(folder, "distributed")
    log.info("worker: %s; storage %s, database %s, at most %d rows queued", settings, describe_dsn(dsn),
             args.database, args.max_pending_rows)
    client_config = {"bootstrap.servers": args.bootstrap, **settings.security.client_config()}
    ensure_topics(client_config, TopicNames(args.topic_prefix))
    shell = WorkerShell(settings, lambda: open_landing(dsn, args.database, args.max_pending_rows))
    queries = _serve_queries(shell, folder, args.listen) if folder is not None else None
    metrics = serve_metrics(WorkerMetrics(shell, args.group), args.metrics_listen) if args.metrics_listen else None
    shell.storage_thread.submit(apply_retention, shell.store.writer, args).result()
    catalogs = read_catalogs(args.bootstrap, settings.topics.catalog, client_config=client_config)
    for catalog in catalogs:
        shell.stage.on_catalog(catalog)
    log.info("worker: %d catalogs known before the first frame", len(catalogs))
    load_fitting()  # what every first fit loads is the worker's from its start, not a share of its first hosts'
    app = create_app(settings, shell)
    run_ended = threading.Event()  # set when the worker ends its own run; an operator's SIGTERM hands over instead
    if args.duration or args.until_idle:
        _stop_when_done(app, shell, args, run_ended)
    worker = faust.Worker(app, loglevel=logging.getLevelName(logging.getLogger().level).lower(),
                          override_logging=False, quiet=True)
    status = 0
    try:
        worker.execute_from_commandline()
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else 1
    finally:
        shell.close(close_incidents=run_ended.is_set())
        log.info("worker stopped: %s; stage %s; rows written %s", shell.counters, shell.stage.counters,
                 shell.store.rows_written)
        if metrics is not None:
            metrics.shutdown()
        if queries is not None:
            queries.close()
    return status


def _stop_when_done(app, shell: WorkerShell, args, run_ended: threading.Event) -> None:
    """A task that ends the worker's run at --duration or after --until-idle seconds without input: it stores what
    is pending, marks the run ended and stops the worker as an operator's SIGTERM would."""
    @app.task
    async def stop_when_done():
        started = time.monotonic()
        while not _done(shell, started, args.duration, args.until_idle):
            await asyncio.sleep(0.5)
        log.info("worker stopping: %s", "duration reached" if args.duration and
                 time.monotonic() - started >= args.duration else "input idle")
        await shell.flush()  # so that the consumer commits what is stored as it stops
        run_ended.set()
        os.kill(os.getpid(), signal.SIGTERM)  # the same clean path as an operator's stop


def _serve_queries(shell: WorkerShell, folder, listen: tuple[str, int]) -> LiveServer:
    """Read-only queries of the worker's embedded tables, answered on its storage thread (chDB allows one process
    per folder) and announced in the data folder, as a reveal run announces its own."""
    from reveal.live.server import LiveServer

    host, port = listen
    read = lambda sql, parameters: shell.storage_thread.submit(  # noqa: E731
        shell.store.writer.query, sql, parameters, True).result()
    try:
        server = LiveServer(host, port, dict, read, page=False)
    except OSError as error:
        raise ValueError(f"--listen {host}:{port}: {error}; choose another address (port 0 picks a free one)") \
            from None
    server.start(folder)
    log.info("worker: read-only queries of %s at %s/api/query", folder, server.url)
    return server


def _done(shell: WorkerShell, started: float, duration: float | None, until_idle: float | None) -> bool:
    now = time.monotonic()
    if duration and now - started >= duration:
        return True
    last = shell.last_record_at
    # input paused for storage, rows still waiting on a first slow write, or records in Kafka the consumer has not
    # read yet (a stalled fetch) is not idle input
    storage_failing = shell.backoff.failing or shell.store.pending_rows() > 0
    unread = sum(shell.unread_records().values())
    return bool(until_idle and last is not None and not storage_failing and not unread and now - last >= until_idle)
