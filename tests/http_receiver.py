"""A local HTTP endpoint for tests of what Reveal posts: it keeps every JSON body posted to it, answers with a status
of the test's choosing, and can be stopped and started again on the same port (a receiver outage)."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class _ReusableServer(ThreadingHTTPServer):
    allow_reuse_address = True
    daemon_threads = True


class Receiver:
    def __init__(self, status: int = 200):
        self.port, self.status, self.bodies, self._server = free_port(), status, [], None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> "Receiver":
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.bodies.append(json.loads(body))
                self.send_response(receiver.status)
                self.end_headers()

            def log_message(self, *args):
                pass

        self._server = _ReusableServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def wait_for(self, count: int, timeout_s: float) -> list[dict]:
        deadline = time.monotonic() + timeout_s
        while len(self.bodies) < count and time.monotonic() < deadline:
            time.sleep(0.1)
        return self.bodies
