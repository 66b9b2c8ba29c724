"""`reveal run`: the embedded mode — agent, engine and chDB in one process on this host, no broker."""

from __future__ import annotations

import logging
import sys
from dataclasses import replace
from pathlib import Path

from reveal.cli.options import (DEFAULT_DATA_DIR, StopFlag, add_agent_options,
                                     add_engine_options, add_retention_options, agent_settings, apply_retention,
                                     claim_data_folder, engine_settings, listen_address, positive_seconds,
                                     writable_folder)

log = logging.getLogger(__name__)

DEFAULT_LISTEN = ("127.0.0.1", 9931)  # the live page and its queries


def register(commands) -> None:
    parser = commands.add_parser(
        "run", help="sample this host and detect anomalies in one process (embedded mode)",
        description="Sample this host every --interval seconds, window and score its telemetry, print each window "
                    "and anomaly as it happens, and store frames, windows and anomalies in an embedded ClickHouse "
                    "(chDB) under --data-dir. Stops at the end of --duration or on Ctrl-C, exit status 0.")
    parser.add_argument("--duration", type=positive_seconds, default=None, metavar="S",
                        help="stop after this many seconds (default: run until Ctrl-C)")
    parser.add_argument("--data-dir", type=writable_folder, default=DEFAULT_DATA_DIR, metavar="DIR",
                        help=f"where the embedded ClickHouse keeps its tables (default: {DEFAULT_DATA_DIR})")
    add_agent_options(parser)
    add_retention_options(parser)
    parser.add_argument("--quiet", action="store_true", help="do not print a line per window")
    parser.add_argument("--listen", type=listen_address, default=DEFAULT_LISTEN, metavar="HOST:PORT",
                        help="where the live page and the run's query service listen; port 0 picks a free one "
                             f"(default: {DEFAULT_LISTEN[0]}:{DEFAULT_LISTEN[1]})")
    parser.add_argument("--no-ui", action="store_true",
                        help="serve no live page (queries from reveal sql and reveal report are still answered)")
    add_engine_options(parser)
    parser.set_defaults(handler=handle)


def handle(args) -> int:
    from producers.agent import Agent
    from sinks.clickhouse import ClickHouseWriter, data_dir_dsn
    from sinks.landing import ClickHouseLanding
    from stream_jobs.embedded import EmbeddedRunner
    from stream_jobs.engine.ensemble import load_fitting
    from stream_jobs.host_stage import HostStage
    from stream_jobs.live_state import LiveState

    agent_config = replace(agent_settings(args), data_dir=str(Path(args.data_dir).resolve()))
    engine = engine_settings(args, args.interval)
    dsn = data_dir_dsn(args.data_dir)
    _refuse_a_folder_in_use(args.data_dir)
    claim_data_folder(args.data_dir, "embedded")
    sink = _LaterSink()
    agent = Agent(agent_config, sink)  # checks the sources before anything is stored
    storage: list[ClickHouseWriter] = []
    server = _listen(args, lambda sql, parameters: storage[0].query(sql, parameters, True))
    log.info("embedded run: %s; %s; storage %s", agent_config, engine, dsn)
    Path(args.data_dir).mkdir(parents=True, exist_ok=True)
    writer = ClickHouseWriter(dsn)
    storage.append(writer)
    apply_retention(writer, args)
    live = LiveState(engine.warmup_windows)
    server.snapshot = live.snapshot
    console = None if args.quiet else sys.stdout
    _close_abandoned(writer, agent_config.host)
    landing = ClickHouseLanding(writer)
    stage = HostStage(engine, landing.saved_baseline, str(args.data_dir))
    runner = sink.target = EmbeddedRunner(stage, landing, console, live=live, one_host=True)  # this host's agent
    load_fitting()  # the engine's own one-off growth comes before this host's baseline, which would see it
    server.start(args.data_dir)
    print(f"live page: {server.url}/" if server.page else f"queries: {server.url}/api/query", flush=True)
    try:
        stats = agent.run(StopFlag(args.duration))
        agent.close()
        runner.close()
    finally:
        server.close()
        writer.close()
    print(f"stopped after {stats.ticks} samples ({stats.skipped} skipped, max tick lag {stats.max_lag_s * 1e3:.1f} ms): "
          f"{runner.summary()} stored in {args.data_dir}", flush=True)
    return 0


def _close_abandoned(writer: ClickHouseWriter, host: str) -> None:
    """Incidents a killed or crashed run left open are closed, and the console says so."""
    from sinks.landing import ABANDONED_NOTE, close_abandoned_incidents

    closed = close_abandoned_incidents(writer, host)
    if closed:
        print(f"{len(closed)} incident{'s' if len(closed) > 1 else ''} of {host} left open by a run that stopped "
              f"without closing {'them' if len(closed) > 1 else 'it'} closed ({ABANDONED_NOTE}): "
              + ", ".join(closed[:5]), flush=True)


class _LaterSink:
    """Hands the agent's output to a target set once storage is open."""

    target = None

    def on_catalog(self, catalog) -> None:
        self.target.on_catalog(catalog)

    def on_frame(self, frame) -> None:
        self.target.on_frame(frame)

    def end_block(self) -> None:
        self.target.end_block()


def _listen(args, query) -> LiveServer:
    """The live page and the read-only query service, bound (not yet serving) so a busy address fails first."""
    from reveal.cli import CommandError
    from reveal.live.server import LiveServer

    host, port = args.listen
    try:
        return LiveServer(host, port, dict, query, page=not args.no_ui)
    except OSError as error:
        raise CommandError(f"--listen {host}:{port}: {error}; choose another address (port 0 picks a free one)") \
            from None


def _refuse_a_folder_in_use(data_dir: str) -> None:
    from reveal.cli import CommandError
    from reveal.live.client import running_service

    url = running_service(data_dir)
    if url is not None:
        raise CommandError(f"--data-dir {data_dir} is being written by another reveal run (live at {url}/); "
                           "give this run its own --data-dir")
