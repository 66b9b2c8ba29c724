"""TLS/SASL settings pass through to every Kafka client: an agent and a Faust worker authenticate to a broker's
SASL_PLAINTEXT listener with a password from the environment, frames flow end to end, and the password appears in
no log and no command line."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from schemas.kafka_security import KafkaSecurity
from schemas.topics import TopicNames
from tests.integration.kafka_io import read_frames

pytestmark = pytest.mark.integration

SCRIPTS = Path(__file__).resolve().parents[2] / "infra" / "kafka"
PLAIN_PORT, SASL_PORT = 19094, 19096
PASSWORD = "s3cret-Pass-7741"


def _broker(action: str, home: Path) -> None:
    env = {**os.environ, "REVEAL_KAFKA_HOME": str(home), "REVEAL_KAFKA_PORT": str(PLAIN_PORT),
           "REVEAL_KAFKA_SASL_PORT": str(SASL_PORT), "REVEAL_KAFKA_SASL_USERS": f"reveal:{PASSWORD}",
           "REVEAL_KAFKA_LIBS": str(Path.home() / ".cache" / "reveal" / "kafka" / "libs")}
    result = subprocess.run(["bash", str(SCRIPTS / f"{action}.sh")], env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr


@pytest.fixture
def sasl_broker(kafka_bootstrap, tmp_path):
    home = tmp_path / "kafka"
    _broker("start", home)
    yield home
    _broker("stop", home)


def _reveal(*argv: str, password: str = PASSWORD, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "REVEAL_KAFKA_SASL_PASSWORD": password}
    return subprocess.run([sys.executable, "-m", "reveal.cli", *argv], env=env, capture_output=True, text=True,
                          timeout=timeout)


SASL = ("--bootstrap", f"127.0.0.1:{SASL_PORT}", "--kafka-security-protocol", "SASL_PLAINTEXT",
        "--kafka-sasl-username", "reveal")


def test_agent_and_worker_authenticate_and_never_show_the_password(sasl_broker, tmp_path):
    names = TopicNames("sasl.")
    agent = _reveal("agent", *SASL, "--topic-prefix", names.prefix, "--host", "sasl-host", "--no-spool",
                    "--sources", "memory,network", "--duration", "16")
    assert agent.returncode == 0, agent.stderr[-2000:]
    frames = read_frames(f"127.0.0.1:{PLAIN_PORT}", names.samples, expected=100, timeout_s=30)
    assert len(frames) >= 100 and {frame.host for frame in frames} == {"sasl-host"}

    worker = _reveal("worker", *SASL, "--topic-prefix", names.prefix, "--group", "sasl-worker", "--clickhouse",
                     f"chdb://{tmp_path / 'ch'}", "--until-idle", "8", "--warmup", "10")
    assert worker.returncode == 0, worker.stderr[-2000:]
    count = subprocess.run([sys.executable, "-m", "reveal.cli", "sql", "--clickhouse", f"chdb://{tmp_path / 'ch'}",
                            "--format", "jsonl", "SELECT count() AS n FROM windows"], capture_output=True, text=True)
    assert '"n": ' in count.stdout and int(count.stdout.split('"n": ')[1].split("}")[0]) >= 5
    for output in (agent.stdout, agent.stderr, worker.stdout, worker.stderr):
        assert PASSWORD not in output


def test_a_sasl_protocol_without_a_password_is_refused_with_the_variable_named():
    with pytest.raises(ValueError, match="REVEAL_KAFKA_SASL_PASSWORD"):
        KafkaSecurity.from_environment({}, protocol="SASL_PLAINTEXT", sasl_username="reveal")
    refused = _reveal("agent", *SASL, "--duration", "1", password="")
    assert refused.returncode == 2 and "REVEAL_KAFKA_SASL_PASSWORD" in refused.stderr


def test_secrets_stay_out_of_reprs_and_the_client_config_carries_them():
    security = KafkaSecurity.from_environment({"REVEAL_KAFKA_SASL_PASSWORD": PASSWORD},
                                              protocol="SASL_SSL", sasl_username="u", ssl_ca="/ca.pem",
                                              sasl_password="from-argv-is-ignored")
    assert PASSWORD not in repr(security)
    config = security.client_config()
    assert config["sasl.password"] == PASSWORD and config["ssl.ca.location"] == "/ca.pem"
    with pytest.raises(ValueError, match="one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"):
        KafkaSecurity(protocol="KERBEROS")
