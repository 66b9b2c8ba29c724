"""`reveal collect`: record this host's frames and catalog to a local Avro file, for offline detection and replays."""

from __future__ import annotations

import logging
import os

from producers.agent import Agent
from reveal.cli.options import StopFlag, add_agent_options, agent_settings, output_file, positive_seconds

log = logging.getLogger(__name__)


def register(commands) -> None:
    parser = commands.add_parser(
        "collect", help="record this host's telemetry to an Avro file",
        description="Sample this host as the agent does and write the channel catalog and every frame to an Avro "
                    "object container file (readable by 'reveal detect' and any Avro tool). Stops at the end of "
                    "--duration or on Ctrl-C; what was recorded until then is kept.")
    parser.add_argument("--duration", type=positive_seconds, default=None, metavar="S",
                        help="stop after this many seconds (default: run until Ctrl-C)")
    parser.add_argument("--out", type=output_file(".avro"), required=True, metavar="FILE.avro", help="the recording to write")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace --out if it exists (default: refuse, so no recording is lost)")
    add_agent_options(parser)
    parser.set_defaults(handler=handle)


def handle(args) -> int:
    from producers.recording import RecordingWriter  # fastavro's container writer, loaded by this command alone
    from reveal.cli import CommandError

    if os.path.exists(args.out) and not args.overwrite:
        raise CommandError(f"{args.out} exists; give another --out, or --overwrite to replace it")
    settings = agent_settings(args)
    log.info("recording %s to %s", settings, args.out)
    writer = RecordingWriter(args.out)
    agent = Agent(settings, writer)
    try:
        stats = agent.run(StopFlag(args.duration))
    finally:
        agent.close()
        writer.close()
    print(f"recorded {writer.frames} frames of {len(agent.registry.catalog.channels)} channels to {args.out} "
          f"({stats.skipped} ticks skipped)", flush=True)
    return 0
