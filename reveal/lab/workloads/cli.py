"""The command line `python -m reveal.lab.workloads KIND …`: one subcommand per workload, its options checked
and frozen into that workload's settings, then the workload run until it ends, fails or is stopped."""

from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path

from reveal.lab.workloads.common import Endpoint, JsonLines, Stop, say
from reveal.lab.workloads.errors import PeerClosed, Stopped, WorkloadError
from reveal.lab.workloads.infer import ClientSettings, ServeSettings, run_client, run_serve
from reveal.lab.workloads.input_pipeline import InputSettings, run_input
from reveal.lab.workloads.train import TrainSettings, run_train


def _endpoint(text: str) -> Endpoint:
    try:
        return Endpoint.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _endpoints(text: str) -> tuple[Endpoint, ...]:
    return tuple(_endpoint(part) for part in text.split(",") if part.strip())


def _positive(kind):
    def parse(text: str):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r} must be more than zero")
        return value
    return parse


def _not_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must not be negative")
    return value


def _not_negative(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must not be negative")
    return value


def _add_common(parser: argparse.ArgumentParser, logs: bool = True) -> None:
    parser.add_argument("--duration", type=_positive(float), default=60.0, metavar="S",
                        help="stop after this many seconds (default: 60)")
    if logs:
        parser.add_argument("--log", default=None, metavar="FILE",
                            help="append JSON lines here (default: stdout)")


def _add_compute(parser: argparse.ArgumentParser, compute_ms: float, matrix_size: int, what: str) -> None:
    parser.add_argument("--compute-ms", type=_not_negative, default=compute_ms, metavar="MS",
                        help=f"CPU compute per {what}, as matmuls calibrated at start to take about this long "
                             f"(default: {compute_ms:g}); contention then lengthens it")
    parser.add_argument("--matrix-size", type=_positive(int), default=matrix_size, metavar="N",
                        help=f"side of the float32 matrices multiplied (default: {matrix_size})")


def _add_train(commands) -> None:
    parser = commands.add_parser(
        "train", help="data-parallel training: compute, then a ring allreduce with the other ranks",
        description="One rank of data-parallel training. Each step runs matmuls, then sums a float32 gradient over "
                    "all ranks by a ring allreduce (reduce-scatter + all-gather) over TCP. Each step: matmuls "
                    "(--compute-ms), a wait standing for accelerator kernels (--accelerator-ms), then the allreduce. "
                    "Logs one JSON line per step: workload, rank, step, compute_s (matmuls + accelerator wait), "
                    "allreduce_s, step_s (their sum), ts (Unix seconds).")
    parser.add_argument("--rank", type=int, required=True, help="this process's rank, an index into --peers")
    parser.add_argument("--peers", type=_endpoints, required=True, metavar="ADDR:PORT,…",
                        help="every rank's address in rank order; this rank listens on its own entry")
    parser.add_argument("--gradient-mb", type=_positive(float), default=4.0, metavar="MB",
                        help="size of the gradient summed each step, in MiB (default: 4)")
    _add_compute(parser, 80.0, 256, "step")
    parser.add_argument("--accelerator-ms", type=_not_negative, default=400.0, metavar="MS",
                        help="idle wait per step standing for accelerator kernels, which the host CPU does not see "
                             "(default: 400)")
    parser.add_argument("--connect-timeout", type=_positive(float), default=30.0, metavar="S",
                        help="how long to wait for the neighbouring ranks to come up (default: 30)")
    parser.add_argument("--io-timeout", type=_positive(float), default=30.0, metavar="S",
                        help="give up when the ring makes no progress for this long (default: 30)")
    parser.add_argument("--matmuls", type=_not_negative_int, default=0, metavar="N",
                        help="matmuls per step instead of calibrating --compute-ms, so that every rank does the same "
                             "work (default: calibrate)")
    parser.add_argument("--eval-every", type=_not_negative_int, default=0, metavar="STEPS",
                        help="an evaluation pass after every STEPS training steps; 0 for none (default: 0)")
    parser.add_argument("--eval-steps", type=_not_negative_int, default=0, metavar="N",
                        help="compute-only steps (no allreduce) in each evaluation pass (default: 0)")
    parser.add_argument("--checkpoint-every", type=_not_negative_int, default=0, metavar="STEPS",
                        help="write a checkpoint shard after every STEPS training steps; 0 for none (default: 0)")
    parser.add_argument("--checkpoint-mb", type=_positive(float), default=16.0, metavar="MB",
                        help="size of each rank's checkpoint shard in MiB (default: 16)")
    parser.add_argument("--checkpoint-dir", type=Path, default=None, metavar="DIR",
                        help="where checkpoint shards are written (needed with --checkpoint-every)")
    _add_common(parser)
    parser.set_defaults(settings=TrainSettings, run=run_train)


def _add_infer(commands) -> None:
    parser = commands.add_parser("infer", help="inference: a server answering requests, and a client sending them",
                                 description="An inference request loop over TCP: `serve` on one host, `client` on "
                                             "another.")
    roles = parser.add_subparsers(dest="role", required=True, metavar="ROLE")
    serve = roles.add_parser("serve", help="answer requests",
                             description="Answer each request (header + payload) with a payload of --response-kb "
                                         "after a small compute. Logs nothing but its start line on stderr.")
    serve.add_argument("--listen", type=_endpoint, required=True, metavar="ADDR:PORT", help="address to listen on")
    serve.add_argument("--response-kb", type=_not_negative, default=16.0, metavar="KB",
                       help="response payload in KiB (default: 16)")
    _add_compute(serve, 5.0, 128, "request")
    _add_common(serve, logs=False)
    serve.set_defaults(settings=ServeSettings, run=lambda settings, stop, log: run_serve(settings, stop))
    client = roles.add_parser(
        "client", help="send requests at a fixed rate with periodic bursts",
        description="Send requests on one connection at --rate per second, --burst-factor times that for --burst-s "
                    "every --burst-every seconds. Logs one JSON line per request: workload, request, latency_s, "
                    "burst, request_bytes, response_bytes, ts (Unix seconds).")
    client.add_argument("--server", type=_endpoint, required=True, metavar="ADDR:PORT", help="the server's address")
    client.add_argument("--rate", type=_positive(float), default=20.0, metavar="R",
                        help="requests per second outside bursts (default: 20)")
    client.add_argument("--request-kb", type=_not_negative, default=4.0, metavar="KB",
                        help="request payload in KiB (default: 4)")
    client.add_argument("--burst-every", type=_not_negative, default=10.0, metavar="S",
                        help="seconds between burst starts; 0 for none (default: 10)")
    client.add_argument("--burst-s", type=_not_negative, default=2.0, metavar="S",
                        help="length of each burst (default: 2)")
    client.add_argument("--burst-factor", type=_positive(float), default=3.0, metavar="X",
                        help="rate multiplier during a burst (default: 3)")
    client.add_argument("--connect-timeout", type=_positive(float), default=30.0, metavar="S",
                        help="how long to wait for the server to come up (default: 30)")
    client.add_argument("--io-timeout", type=_positive(float), default=30.0, metavar="S",
                        help="give up on a request unanswered this long (default: 30)")
    _add_common(client)
    client.set_defaults(settings=ClientSettings, run=run_client)


def _add_input(commands) -> None:
    parser = commands.add_parser(
        "input", help="input pipeline: read batches of files from storage, then compute",
        description="Create --files files of --file-mb MiB in --data-dir once, then each step read --batch-files of "
                    "them (dropping them from the page cache after, so reads reach storage) and run a small "
                    "compute. Logs one JSON line per step: workload, step, files, bytes, read_s, compute_s, step_s, "
                    "ts (Unix seconds).")
    parser.add_argument("--data-dir", type=Path, required=True, metavar="DIR", help="where the files live")
    parser.add_argument("--files", type=_positive(int), default=32, metavar="N",
                        help="files in the data set (default: 32)")
    parser.add_argument("--file-mb", type=_positive(float), default=4.0, metavar="MB",
                        help="size of each file in MiB (default: 4)")
    parser.add_argument("--batch-files", type=_positive(int), default=4, metavar="N",
                        help="files read per step (default: 4)")
    _add_compute(parser, 100.0, 256, "step")
    parser.add_argument("--step-ms", type=_not_negative, default=1000.0, metavar="MS",
                        help="a step starts at most this often (default: 1000)")
    parser.add_argument("--epoch-pause-s", type=_not_negative, default=0.0, metavar="S",
                        help="pause between epochs (passes over the data set, each in a new shuffled order), as a "
                             "data loader restarting its workers (default: 0)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the epochs' shuffled orders (default: 0)")
    _add_common(parser)
    parser.set_defaults(settings=InputSettings, run=run_input)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m reveal.lab.workloads",
        description="ML-like workloads for the fault-injection lab. Each runs for --duration seconds, stops cleanly "
                    "on SIGTERM/SIGINT and talks only to the addresses it is given.")
    commands = parser.add_subparsers(dest="kind", required=True, metavar="KIND")
    _add_train(commands)
    _add_infer(commands)
    _add_input(commands)
    return parser


def settings_from(args: argparse.Namespace):
    """The frozen settings object of the chosen workload, from its parsed options."""
    return args.settings(**{field.name: getattr(args, field.name) for field in fields(args.settings)})


def _validate(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.kind != "train":
        return
    if args.checkpoint_every and args.checkpoint_dir is None:
        parser.error("--checkpoint-every needs --checkpoint-dir")
    if len(args.peers) < 2:
        parser.error("--peers needs at least two ranks")
    if len(set(args.peers)) != len(args.peers):
        parser.error("--peers lists an address twice")
    if not 0 <= args.rank < len(args.peers):
        parser.error(f"--rank {args.rank} is not an index into the {len(args.peers)} --peers")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _validate(parser, args)
    settings = settings_from(args)
    name = " ".join(filter(None, (args.kind, getattr(args, "role", None))))
    say(f"{name}: {settings}, duration {args.duration:g} s")
    stop = Stop(args.duration)
    stop.install_signal_handlers()
    log = JsonLines(getattr(args, "log", None))
    try:
        args.run(settings, stop, log)
    except (Stopped, PeerClosed) as reason:
        say(f"{name}: stopping: {reason}")
    except (WorkloadError, OSError) as error:
        say(f"{name}: {error}")
        return 1
    finally:
        stop.ignore_late_signals()
        log.close()
    return 0
