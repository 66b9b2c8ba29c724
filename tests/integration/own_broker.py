"""A Kafka broker of a test's own on another port (started with infra/kafka/start.sh), so the test can stop it and
start it again on the same log directory (REVEAL_KAFKA_KEEP_DATA=1: topics and offsets kept)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "infra" / "kafka"


class OwnBroker:
    def __init__(self, home: Path, port: int):
        self.home, self.port = home, port
        self.bootstrap = f"127.0.0.1:{port}"

    def start(self) -> None:
        self._run("start")

    def stop(self) -> None:
        self._run("stop")

    def _run(self, action: str) -> None:
        env = {**os.environ, "REVEAL_KAFKA_HOME": str(self.home), "REVEAL_KAFKA_PORT": str(self.port),
               "REVEAL_KAFKA_KEEP_DATA": "1",
               "REVEAL_KAFKA_LIBS": str(Path.home() / ".cache" / "reveal" / "kafka" / "libs")}
        result = subprocess.run(["bash", str(SCRIPTS / f"{action}.sh")], env=env, capture_output=True, text=True,
                                timeout=120)
        assert result.returncode == 0, result.stderr
