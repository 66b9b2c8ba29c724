"""Finding the run that holds a data folder from its announcement (alive, dead or garbled), and a query to a run that
no longer answers told as a storage error."""

import json
import os
import socket
import subprocess
import sys

import pytest

from reveal.live.client import RunQueries, running_service
from reveal.live.server import ANNOUNCEMENT
from sinks.clickhouse import StorageError


def test_a_folder_is_held_only_while_the_announcing_process_lives(tmp_path):
    assert running_service(tmp_path) is None
    (tmp_path / ANNOUNCEMENT).write_text(json.dumps({"pid": os.getpid(), "url": "http://127.0.0.1:9931"}))
    assert running_service(tmp_path) == "http://127.0.0.1:9931"
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / ANNOUNCEMENT).write_text(json.dumps({"pid": int(gone.stdout), "url": "http://127.0.0.1:9931"}))
    assert running_service(tmp_path) is None


@pytest.mark.parametrize("text", ["", "not json", '{"url": "http://x"}', '{"pid": "x", "url": "http://x"}', "[1]"])
def test_a_garbled_announcement_holds_nothing(tmp_path, text):
    (tmp_path / ANNOUNCEMENT).write_text(text)
    assert running_service(tmp_path) is None


def test_a_run_that_does_not_answer_is_a_storage_error_naming_it():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with pytest.raises(StorageError, match=f"the running reveal run at {url} did not answer"):
        RunQueries(url).query("SELECT 1")
