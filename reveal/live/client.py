"""Reading a data folder that a `reveal run` is writing: through the run's own query service."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path

from sinks.clickhouse import StorageError
from reveal.live.server import ANNOUNCEMENT, decode_value

TIMEOUT_S = 60.0


def running_service(data_dir: str | Path) -> str | None:
    """The address of the run that holds the folder and serves its queries, or None when no live run does."""
    announcement = Path(data_dir) / ANNOUNCEMENT
    try:
        record = json.loads(announcement.read_text())
        pid, url = int(record["pid"]), str(record["url"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return url if _alive(pid) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunQueries:
    """Queries answered by a running `reveal run` (read-only); the same `query` as a local reader."""

    def __init__(self, url: str):
        self.url = url

    def query(self, sql: str, parameters: dict | None = None):
        body = json.dumps({"sql": sql, "parameters": parameters or {}}).encode()
        request = urllib.request.Request(f"{self.url}/api/query", body, {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as error:
            raise StorageError(f"the running reveal run at {self.url} refused the query: "
                               f"{_error_text(error)}") from None
        except (urllib.error.URLError, OSError) as error:
            raise StorageError(f"the running reveal run at {self.url} did not answer: {error}") from None
        return tuple(answer["columns"]), [tuple(decode_value(v) for v in row) for row in answer["rows"]]

    def close(self) -> None:
        """Nothing to release: each query is its own request."""


def _error_text(error: urllib.error.HTTPError) -> str:
    try:
        return json.loads(error.read())["error"]
    except (ValueError, KeyError, OSError):
        return f"HTTP {error.code}"
