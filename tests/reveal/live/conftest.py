"""The live run that the tests of the live page and of its server watch: one reveal run for the whole package."""

import json
import subprocess
import sys
import time
import urllib.request

import pytest

from reveal.live.client import running_service

HOSTILE = '<img src=x onerror="document.title=1">'


@pytest.fixture(scope="package")
def live_run(tmp_path_factory):
    """A 90-second reveal run under a hostile host name, on a free port; yields (data dir, page address)."""
    data_dir = tmp_path_factory.mktemp("live") / "data"
    process = subprocess.Popen([sys.executable, "-m", "reveal.cli", "run", "--duration", "90", "--data-dir",
                                str(data_dir), "--warmup", "10", "--host", HOSTILE, "--listen", "127.0.0.1:0",
                                "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while running_service(data_dir) is None:
        assert process.poll() is None, process.stderr.read()[-2000:]
        assert time.monotonic() < deadline, "the run never announced its live page"
        time.sleep(0.2)
    url = running_service(data_dir)
    while not _state(url)["hosts"] or _state(url)["hosts"][0]["windows"] < 14:
        assert time.monotonic() < deadline + 30, "the run showed no windows"
        time.sleep(0.5)
    yield data_dir, url
    process.terminate()
    process.wait(timeout=60)
    assert running_service(data_dir) is None and not (data_dir / "live.json").exists()


def _state(url: str) -> dict:
    with urllib.request.urlopen(f"{url}/api/state", timeout=10) as response:
        return json.loads(response.read())
