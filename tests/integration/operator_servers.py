"""The operators' real servers for tests: Debian's Prometheus and Alertmanager, started on free ports in a test's
folder and stopped after it. A missing server fails the test (bash .ci/run installs both)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.http_receiver import free_port

INSTALL_HINT = "apt-get install -y prometheus prometheus-alertmanager (bash .ci/run does)"


def server_binary(*names: str) -> str:
    found = next((shutil.which(name) for name in names if shutil.which(name)), None)
    if found is None:
        pytest.fail(f"{names[0]} is not installed: {INSTALL_HINT}")
    return found


class Server:
    """One server process on 127.0.0.1:port, with JSON GETs and POSTs against its HTTP API."""

    def __init__(self, command: list[str], port: int, log: Path, ready_path: str):
        self.port, self.log = port, log
        self.process = subprocess.Popen(command, stdout=open(log, "wb"), stderr=subprocess.STDOUT)
        self.wait_until(lambda: self.get(ready_path, raw=True) is not None, 60, f"{command[0]} never became ready")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def get(self, path: str, raw: bool = False, **query):
        url = f"{self.url}{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                body = response.read()
        except OSError:
            return None
        return body if raw else json.loads(body)

    def wait_until(self, condition, timeout_s: float, why: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            if self.process.poll() is not None:
                pytest.fail(f"{why}: it exited; its log: {self.log.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"{why} within {timeout_s:.0f} s; its log: {self.log.read_text()[-2000:]}")
            time.sleep(0.5)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def prometheus(folder: Path, config: str) -> Server:
    port = free_port()
    (folder / "prometheus.yml").write_text(config)
    command = [server_binary("prometheus"), f"--config.file={folder / 'prometheus.yml'}",
               f"--storage.tsdb.path={folder / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}"]
    return Server(command, port, folder / "prometheus.log", "/-/ready")


def alertmanager(folder: Path) -> Server:
    port = free_port()
    (folder / "alertmanager.yml").write_text("route:\n  receiver: none\n  group_wait: 1s\nreceivers:\n  - name: none\n")
    command = [server_binary("prometheus-alertmanager", "alertmanager"),
               f"--config.file={folder / 'alertmanager.yml'}", f"--storage.path={folder / 'alertmanager'}",
               f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="]
    return Server(command, port, folder / "alertmanager.log", "/-/ready")
