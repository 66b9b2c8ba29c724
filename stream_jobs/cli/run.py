"""`reveal run`: the embedded mode — agent, engine and chDB in one process on this host, no broker."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from producers.agent import Agent
from sinks.clickhouse import ClickHouseWriter, data_dir_dsn
from stream_jobs.cli.options import (DEFAULT_DATA_DIR, StopFlag, add_agent_options, add_engine_options, agent_settings,
                                     engine_settings,
                                     positive_seconds)
from stream_jobs.embedded import EmbeddedRunner
from stream_jobs.host_stage import HostStage

log = logging.getLogger(__name__)


def register(commands) -> None:
    parser = commands.add_parser(
        "run", help="sample this host and detect anomalies in one process (embedded mode)",
        description="Sample this host every --interval seconds, window and score its telemetry, print each window "
                    "and anomaly as it happens, and store frames, windows and anomalies in an embedded ClickHouse "
                    "(chDB) under --data-dir. Stops at the end of --duration or on Ctrl-C, exit status 0.")
    parser.add_argument("--duration", type=positive_seconds, default=None, metavar="S",
                        help="stop after this many seconds (default: run until Ctrl-C)")
    parser.add_argument("--data-dir", default=DEFAULT_DATA_DIR, metavar="DIR",
                        help=f"where the embedded ClickHouse keeps its tables (default: {DEFAULT_DATA_DIR})")
    add_agent_options(parser)
    parser.add_argument("--quiet", action="store_true", help="do not print a line per window")
    add_engine_options(parser)
    parser.set_defaults(handler=handle)


def handle(args) -> int:
    agent_config = agent_settings(args)
    engine = engine_settings(args, args.interval)
    dsn = data_dir_dsn(args.data_dir)
    log.info("embedded run: %s; %s; storage %s", agent_config, engine, dsn)
    Path(args.data_dir).mkdir(parents=True, exist_ok=True)
    writer = ClickHouseWriter(dsn)
    runner = EmbeddedRunner(HostStage(engine), writer, None if args.quiet else sys.stdout)
    agent = Agent(agent_config, runner)
    stats = agent.run(StopFlag(args.duration))
    agent.close()
    runner.close()
    writer.close()
    print(f"stopped after {stats.ticks} samples ({stats.skipped} skipped, max tick lag {stats.max_lag_s * 1e3:.1f} ms): "
          f"{runner.windows} windows, {runner.anomalies} anomalies, {runner.alerts} alert events stored in "
          f"{args.data_dir}", flush=True)
    return 0
