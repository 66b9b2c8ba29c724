"""The embedded run's HTTP service on one local address: the live page (`/`), its data (`/api/state`), and
read-only SQL (`/api/query`) over the run's own ClickHouse, so that readers never open the folder the run holds.

A run announces itself in its data folder (`live.json`: process id and address) while it serves; `reveal sql` and
`reveal report` given that folder send their queries here instead."""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable

from reveal.live.page import render_live_page

log = logging.getLogger(__name__)

ANNOUNCEMENT = "live.json"
MAX_QUERY_BYTES = 1 << 20

Query = Callable[[str, dict | None], tuple]


class LiveServer:
    """Serves the page, its state and read-only queries from a daemon thread until `close`."""

    def __init__(self, host: str, port: int, snapshot: Callable[[], dict], query: Query, page: bool = True):
        self.snapshot, self.query, self.page = snapshot, query, page
        handler = type("LiveHandler", (_Handler,), {"service": self})
        try:
            self._server = ThreadingHTTPServer((host, port), handler)
        except OSError as error:
            raise OSError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="live-page", daemon=True)
        self._announced: Path | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self, data_dir: str | Path | None = None) -> "LiveServer":
        self._thread.start()
        if data_dir is not None:
            self._announced = Path(data_dir) / ANNOUNCEMENT
            self._announced.write_text(json.dumps({"pid": os.getpid(), "url": self.url}))
        return self

    def close(self) -> None:
        if self._announced is not None:
            self._announced.unlink(missing_ok=True)
        self._server.shutdown()
        self._server.server_close()


class _Handler(BaseHTTPRequestHandler):
    service: LiveServer

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        path = self.path.split("?", 1)[0]
        if path == "/" and self.service.page:
            self._send(200, "text/html; charset=utf-8", render_live_page().encode())
        elif path == "/api/state":
            self._send_json(200, self.service.snapshot())
        else:
            self._send_json(404, {"error": f"no such page: {path}"})

    def do_POST(self) -> None:  # noqa: N802
        if self.path != "/api/query":
            self._send_json(404, {"error": f"no such endpoint: {self.path}"})
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_QUERY_BYTES:
            self._send_json(413, {"error": f"query of {length} bytes is over {MAX_QUERY_BYTES}"})
            return
        try:
            request = json.loads(self.rfile.read(length) or b"{}")
            columns, rows = self.service.query(str(request["sql"]), request.get("parameters") or None)
        except (KeyError, ValueError) as error:
            self._send_json(400, {"error": f"a query is a JSON object with 'sql' (and 'parameters'): {error}"})
            return
        except Exception as error:  # the storage's refusal goes back to the caller as it is
            self._send_json(400, {"error": str(error)})
            return
        self._send_json(200, {"columns": list(columns), "rows": [[encode_value(v) for v in row] for row in rows]})

    def _send_json(self, status: int, body: dict) -> None:
        self._send(status, "application/json", json.dumps(body, default=str).encode())

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (the standard library's signature)
        log.debug("live page: " + format, *args)


def encode_value(value):
    """A stored value as JSON: times as {"$time": ISO-8601}, NaN and infinities as {"$float": "nan"}, lists and
    tuples element by element, so that `decode_value` gives back what a local query would."""
    if isinstance(value, dt.datetime):
        return {"$time": value.isoformat()}
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": repr(value)}
    if isinstance(value, (list, tuple)):
        return [encode_value(v) for v in value]
    return value


def decode_value(value):
    if isinstance(value, dict) and "$time" in value:
        return dt.datetime.fromisoformat(value["$time"])
    if isinstance(value, dict) and "$float" in value:
        return float(value["$float"])
    if isinstance(value, list):
        return [decode_value(v) for v in value]
    return value
