"""Option parsing shared by the subcommands, and the one place where a process's stop signals are caught."""

from __future__ import annotations

import argparse
import math
import os
import signal
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

from producers.source_table import SOURCE_GROUPS, validate_groups
from schemas.kafka_security import PROTOCOLS, SASL_MECHANISMS, KafkaSecurity

DEFAULT_DATA_DIR = "./reveal-data"
DEFAULT_FRAME_RETENTION_S = 86400.0
DEFAULT_WINDOW_RETENTION_S = 90 * 86400.0
# False findings a clean host may raise per day (EngineSettings.risk).
DEFAULT_RISK = 0.5
# EngineSettings' warm-up, kept here so that building the parser imports no engine (a test holds them equal)
DEFAULT_WARMUP_S = 30.0
MIN_WARMUP_WINDOWS = 10
DSN_HELP = ("chdb:///path (embedded) or http(s)://[user@]host:port; the password can come from the environment "
            "variable REVEAL_CLICKHOUSE_PASSWORD instead of the DSN")


def positive_seconds(text: str) -> float:
    """A duration in seconds: '20', '2.5', '90s', '5m', '1h' or '7d'."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    scale = units.get(text[-1:].lower(), 1)
    number = text[:-1] if text[-1:].lower() in units else text
    try:
        value = float(number) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (examples: 20, 2.5, 90s, 5m, 1h, 7d)") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite duration (examples: 20, 2.5, 90s, 5m, 1h, 7d)")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be more than zero")
    return value


def positive_count(text: str) -> int:
    """A whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def positive_float(text: str) -> float:
    """A number above 0, e.g. 0.5."""
    value = _number(text)
    if not value > 0.0:
        raise argparse.ArgumentTypeError(f"{text!r} must be above 0, e.g. 0.5")
    return value


def fraction(text: str) -> float:
    """A share or a correlation magnitude, from 0 to 1."""
    value = _number(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} must lie from 0 to 1")
    return value


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value != value:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number")
    return value


def existing_folder(text: str) -> str:
    """A folder that exists, e.g. a /proc or /sys root."""
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a folder")
    return text


def proc_root(text: str) -> str:
    """A proc filesystem root: a folder with a 'stat' file in it."""
    existing_folder(text)
    if not os.path.isfile(os.path.join(text, "stat")):
        raise argparse.ArgumentTypeError(f"{text!r} holds no 'stat' file, so it is not a proc filesystem")
    return text


def existing_file(text: str) -> str:
    if not os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"{text!r}: no such file")
    return text


def output_file(*suffixes: str):
    """A type for a file to write: in a folder that exists and, when `suffixes` are given, with one of them."""
    def output(text: str) -> str:
        if suffixes and not text.lower().endswith(suffixes):
            raise argparse.ArgumentTypeError(f"{text!r}: the name must end in {' or '.join(suffixes)}")
        folder = os.path.dirname(text) or "."
        if not os.path.isdir(folder):
            raise argparse.ArgumentTypeError(f"{text!r}: folder {folder!r} does not exist")
        if os.path.isdir(text):
            raise argparse.ArgumentTypeError(f"{text!r} is a folder, not a file")
        return text
    output.__name__ = "output_file"
    return output


def writable_folder(text: str) -> str:
    """A folder this process can write in: one that exists, or one it can make inside the nearest existing folder
    (tried with a scratch folder made and removed there, since root passes every permission check but a read-only or
    virtual filesystem still refuses)."""
    path = os.path.abspath(text)
    if os.path.exists(path) and not os.path.isdir(path):
        raise argparse.ArgumentTypeError(f"{text!r} is a file, not a folder")
    existing = path
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".reveal-check-", dir=existing))
    except OSError as error:
        raise argparse.ArgumentTypeError(f"{text!r} cannot be written or made here ({existing!r}: "
                                         f"{error.strerror})") from None
    return text


def bootstrap_servers(text: str) -> str:
    """Kafka bootstrap servers: HOST:PORT, or several separated by commas."""
    for server in text.split(","):
        host, sep, port = server.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
            raise argparse.ArgumentTypeError(f"{text!r} must be HOST:PORT[,HOST:PORT…] with ports from 1 to 65535, "
                                             "e.g. 127.0.0.1:9092")
    return text


def display_name(text: str) -> str:
    """A host or cluster name: any text but an empty one, without control characters."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty name names nothing")
    if any(ord(char) < 32 or ord(char) == 127 for char in text):
        raise argparse.ArgumentTypeError(f"{text!r} holds control characters")
    return text


def listen_address(text: str) -> tuple[str, int]:
    """HOST:PORT to listen on, e.g. 127.0.0.1:9931 or 0.0.0.0:0 (port 0: any free port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} must look like HOST:PORT with a port from 0 to 65535, "
                                         "e.g. 127.0.0.1:9931")
    return host.strip("[]"), int(port)


def _zero_or_seconds_up_to(text: str, limit_s: float, too_long: str) -> float:
    """'0' for none, or a duration of at most limit_s seconds (`too_long` says what a longer one is)."""
    if text.strip().startswith("-"):
        raise argparse.ArgumentTypeError(f"{text!r} must not be negative")
    value = 0.0 if text.strip() in ("0", "0s") else positive_seconds(text)
    if value > limit_s:
        raise argparse.ArgumentTypeError(f"{text!r} is {too_long}")
    return value


def settle_seconds(text: str) -> float:
    """A settle time: '0' for none, or a duration up to an hour."""
    return _zero_or_seconds_up_to(text, 3600, "more than an hour")


def publish_every_seconds(text: str) -> float:
    """How often the agent hands out its frames: '0' for every tick, or a duration up to 10 s."""
    return _zero_or_seconds_up_to(text, 10, "more than 10 s")


def source_interval(text: str) -> tuple[str, float]:
    """SOURCE=SECONDS, e.g. /proc/vmstat=1 or nvml=0.5."""
    source, sep, seconds = text.rpartition("=")
    if not sep or not source:
        raise argparse.ArgumentTypeError(f"{text!r} must look like SOURCE=SECONDS, e.g. /proc/vmstat=1")
    return source, positive_seconds(seconds)


def source_groups(text: str) -> tuple[str, ...]:
    """'network,cgroups' → ('network', 'cgroups'), each a known group of sources."""
    try:
        return validate_groups(tuple(part.strip() for part in text.split(",") if part.strip()))
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_agent_options(parser: argparse.ArgumentParser) -> None:
    """How this host is sampled: its names, the interval, the roots read, and per-source intervals."""
    parser.add_argument("--host", type=display_name, default=None,
                        help="host name to report (default: this machine's name)")
    parser.add_argument("--cluster", type=display_name, default="default",
                        help="cluster name to report (default: default)")
    parser.add_argument("--interval", type=positive_seconds, default=0.1, metavar="S",
                        help="sampling interval in seconds (default: 0.1)")
    parser.add_argument("--procfs", type=proc_root, default="/proc",
                        help="root of the proc filesystem to read (default: /proc)")
    parser.add_argument("--sysfs", type=existing_folder, default="/sys",
                        help="root of the sys filesystem to read (default: /sys)")
    parser.add_argument("--cgroup-parent", default="", metavar="PATH",
                        help="cgroup whose children are reported as containers, relative to /sys/fs/cgroup, e.g. "
                             "system.slice or kubepods.slice/kubepods-burstable.slice (default: the root)")
    parser.add_argument("--source-interval", type=source_interval, action="append", default=[],
                        metavar="SOURCE=S", help="read one source at its own interval, e.g. /proc/vmstat=1 "
                                                 "(repeatable; sources are named in the agent's start-up log)")
    parser.add_argument("--sources", type=source_groups, default=(), metavar="GROUP,…",
                        help="read only these groups of sources: " + ", ".join(SOURCE_GROUPS) + " (default: all)")
    parser.add_argument("--net-procfs", default="", metavar="DIR",
                        help="root for the network sources, e.g. /proc/PID to report the network namespace of "
                             "process PID (default: --procfs)")
    parser.add_argument("--settle", type=settle_seconds, default=0.0, metavar="S",
                        help="sample for S seconds before handing out the first frame, so the agent's own start-up "
                             "is never part of a baseline (default: 0)")
    parser.add_argument("--publish-every", type=publish_every_seconds, default=1.0, metavar="S",
                        help="hand out frames every S seconds, all of those ticks at once and as one Kafka message: "
                             "the compiled scanner keeps the schedule meanwhile, so Python and the Kafka client wake "
                             "once per S rather than per tick (about a third less CPU at 0.1 s), and frames reach the "
                             "broker up to S later, except the one just after each multiple of S on the wall clock, "
                             "which ends its block (with S = 1, the frame that closes a worker's window); "
                             "sources the scanner cannot read are read once per S. 0: every tick (default: 1)")


def agent_settings(args):
    """The frozen AgentSettings for parsed agent options."""
    from producers.agent import AgentSettings

    return AgentSettings(**({"host": args.host} if args.host else {}), cluster=args.cluster,
                         interval_s=args.interval, procfs=args.procfs, sysfs=args.sysfs,
                         source_intervals=tuple(args.source_interval), cgroup_parent=args.cgroup_parent,
                         source_groups=args.sources, net_procfs=args.net_procfs, settle_s=args.settle,
                         publish_every_s=args.publish_every)


def add_kafka_options(parser: argparse.ArgumentParser) -> None:
    """Where the broker is and how to authenticate: TLS and SASL options here, their secrets from the environment."""
    parser.add_argument("--bootstrap", type=bootstrap_servers, required=True, metavar="HOST:PORT",
                        help="Kafka bootstrap servers, e.g. 127.0.0.1:9092 (infra/kafka/start.sh starts one)")
    parser.add_argument("--topic-prefix", default="", metavar="PREFIX",
                        help="prefix for every Reveal topic, to keep deployments apart (default: none)")
    security = parser.add_argument_group(
        "Kafka security", "Each option also reads REVEAL_KAFKA_<NAME> from the environment; the passwords are read "
                          "from the environment only (REVEAL_KAFKA_SASL_PASSWORD, REVEAL_KAFKA_SSL_KEY_PASSWORD), "
                          "so that they appear in no process list and no log.")
    security.add_argument("--kafka-security-protocol", default="", choices=("", *PROTOCOLS), metavar="PROTOCOL",
                          help=f"one of {', '.join(PROTOCOLS)} (default: PLAINTEXT)")
    security.add_argument("--kafka-sasl-mechanism", default="", choices=("", *SASL_MECHANISMS), metavar="MECHANISM",
                          help=f"one of {', '.join(SASL_MECHANISMS)} (default: PLAIN)")
    security.add_argument("--kafka-sasl-username", default="", metavar="USER",
                          help="SASL user name (default: none)")
    security.add_argument("--kafka-ssl-ca", default="", metavar="FILE",
                          help="CA certificate(s), PEM (default: the system's)")
    security.add_argument("--kafka-ssl-cert", default="", metavar="FILE",
                          help="client certificate, PEM (default: none)")
    security.add_argument("--kafka-ssl-key", default="", metavar="FILE", help="client private key, PEM (default: none)")


def clickhouse_dsn(dsn: str) -> str:
    """A ClickHouse DSN (chdb:///path or http(s)://host:port), its password taken from REVEAL_CLICKHOUSE_PASSWORD
    when the DSN carries none; a DSN of another form is refused before any work is done."""
    from sinks.clickhouse import StorageError, check_dsn, with_password

    try:
        check_dsn(dsn)
    except StorageError as error:
        raise ValueError(f"--clickhouse: {error}; expected chdb:///path or http(s)://[user@]host:port") from None
    if dsn.startswith("chdb:"):
        try:
            writable_folder(urlparse(dsn).path)
        except argparse.ArgumentTypeError as error:
            raise ValueError(f"--clickhouse {dsn!r}: {error}") from None
    return with_password(dsn, os.environ.get("REVEAL_CLICKHOUSE_PASSWORD"))


def kafka_security(args):
    """The frozen KafkaSecurity of parsed options and this process's environment (the one place it is read)."""
    return KafkaSecurity.from_environment(
        os.environ, protocol=args.kafka_security_protocol, sasl_mechanism=args.kafka_sasl_mechanism,
        sasl_username=args.kafka_sasl_username, ssl_ca=args.kafka_ssl_ca, ssl_cert=args.kafka_ssl_cert,
        ssl_key=args.kafka_ssl_key)


def add_retention_options(parser: argparse.ArgumentParser) -> None:
    """How long stored frames and windows are kept."""
    parser.add_argument("--retention", type=positive_seconds, default=DEFAULT_FRAME_RETENTION_S, metavar="DURATION",
                        help="keep raw frames this long after they are stored, e.g. 6h or 7d; about 0.5 GB per "
                             "host-hour at 700 channels (default: 1d)")
    parser.add_argument("--window-retention", type=positive_seconds, default=DEFAULT_WINDOW_RETENTION_S,
                        metavar="DURATION", help="keep window scores this long after they are stored (default: 90d)")


def apply_retention(writer, args) -> None:
    writer.keep_for("frames", args.retention)
    writer.keep_for("windows", args.window_retention)


def add_engine_options(parser: argparse.ArgumentParser, warmup: bool = True) -> None:
    """How windows are cut and scored: the same options wherever the engine runs (offline detection learns the
    whole baseline, so it has no warm-up to set: warmup False)."""
    parser.add_argument("--window", type=positive_seconds, default=3.0, metavar="S",
                        help="window length in seconds (default: 3)")
    parser.add_argument("--stride", type=positive_seconds, default=1.0, metavar="S",
                        help="seconds between window starts (default: 1)")
    if warmup:
        parser.add_argument("--warmup", type=positive_seconds, default=DEFAULT_WARMUP_S, metavar="DURATION",
                            help="seconds of windows learned as the baseline before anything is judged, e.g. 30 or "
                                 f"5m, and never fewer than {MIN_WARMUP_WINDOWS} windows (default: "
                                 f"{DEFAULT_WARMUP_S:g})")
    parser.add_argument("--paper-thresholds", action="store_true",
                        help="judge as the paper does (§4.3): Z-score, Mahalanobis over the principal components "
                             "that hold 95%% of the variance, and Isolation Forest, on every channel, each flag the "
                             "windows above the 99th percentile of its baseline's scores (scored out of sample), and a "
                             "window is flagged when two agree; the per-channel model, --risk and "
                             "--selection-threshold take no part")
    parser.add_argument("--risk", type=positive_float, default=DEFAULT_RISK, metavar="PER_DAY",
                        help="false findings a clean host may raise per day, over all its channels together: "
                             "each channel's limit is calibrated on the baseline to keep this promise (default: "
                             f"{DEFAULT_RISK:g}); lower finds less, higher finds smaller changes")
    parser.add_argument("--selection-threshold", type=fraction, default=0.5, metavar="R",
                        help="prune channels correlated above |r| = R on the baseline (paper §4.1; default 0.5); "
                             "0 keeps every channel")
    parser.add_argument("--seed", type=int, default=0, help="seed of the Isolation Forest (default: 0)")


class StopFlag:
    """Set by SIGINT/SIGTERM or when a duration runs out; long loops poll it to stop cleanly."""

    def __init__(self, duration_s: float | None = None):
        self._event = threading.Event()
        self._deadline = time.monotonic() + duration_s if duration_s else None
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: self._event.set())

    def __call__(self) -> bool:
        if self._deadline is not None and time.monotonic() >= self._deadline:
            self._event.set()
        return self._event.is_set()


def engine_settings(args, interval_s: float = 0.1):
    """The frozen EngineSettings for parsed engine options."""
    from reveal.cli.config import settings_table
    from stream_jobs.engine.channel_watch import WatchSettings
    from stream_jobs.engine.decide.settings import DecisionSettings
    from stream_jobs.engine.settings import EngineSettings

    warmup = {"warmup_s": args.warmup} if hasattr(args, "warmup") else {}
    if hasattr(args, "interval") and 2 * args.interval > args.window:
        raise ValueError(f"--interval {args.interval:g} s leaves fewer than two samples in a --window of "
                         f"{args.window:g} s; sample at most every {args.window / 2:g} s or widen the window")
    tables = getattr(args, "settings_tables", {})
    return EngineSettings(window_s=args.window, stride_s=args.stride, interval_s=interval_s, **warmup,
                          mode="paper" if args.paper_thresholds else "calibrated", risk=args.risk, seed=args.seed,
                          selection_threshold=args.selection_threshold or None,
                          decision=settings_table(DecisionSettings, "decision", tables),
                          watch=settings_table(WatchSettings, "watch", tables))


# Which kind of run a data folder's tables came from: "embedded" (reveal run) or "distributed" (reveal worker).
FOLDER_MODE_FILE = "mode"


def claim_data_folder(folder: str | os.PathLike, mode: str) -> None:
    """Mark the data folder as holding `mode`'s tables, or refuse it in one line when another kind of run's data is
    there: an embedded run's and a worker's hosts, baselines and incidents must not mix in one set of tables."""
    path = Path(folder) / FOLDER_MODE_FILE
    try:
        held = path.read_text().strip()
    except FileNotFoundError:
        held = ""
    if held and held != mode:
        command = "reveal run" if held == "embedded" else "reveal worker"
        raise ValueError(f"{folder} holds the data of a {command} ({held} mode); give this {mode} run a folder "
                         f"of its own")
    if not held:
        Path(folder).mkdir(parents=True, exist_ok=True)
        path.write_text(mode + "\n")


def embedded_data_folder(dsn: str) -> Path | None:
    """The data folder an embedded DSN lies in (chdb:///DIR/clickhouse → DIR), where `reveal sql --data-dir` and
    `reveal report --data-dir` look; None for a ClickHouse server or a chDB folder named otherwise."""
    if not dsn.startswith("chdb:"):
        return None
    path = Path(urlparse(dsn).path)
    return path.parent if path.name == "clickhouse" else None

