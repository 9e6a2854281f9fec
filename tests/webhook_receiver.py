"""A webhook receiver for the tests: an HTTP server on 127.0.0.1 that records what it is
sent and answers with the status codes it is told to (200 once they run out)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# the ports these tests may listen on
PORTS = range(8400, 8450)


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


class Receiver:
    def __init__(self, port: int) -> None:
        self.port = port
        self.received: list[Received] = []
        self.answers: list[int] = []
        self.hold = threading.Event()  # set: requests wait until it is cleared
        self.holding = threading.Event()  # set once a request waits
        self.got_one = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                if receiver.hold.is_set():
                    receiver.holding.set()
                    while receiver.hold.is_set():
                        threading.Event().wait(0.05)
                    self.close_connection = True
                    return
                receiver.received.append(
                    Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                receiver.got_one.set()
                status = receiver.answers.pop(0) if receiver.answers else 200
                self.send_response(status)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks/claimsdb"

    def start(self) -> Receiver:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.hold.clear()
        self.server.shutdown()
        self.server.server_close()


def free_port() -> int:
    """A port of the tests' range that nothing listens on now."""
    for port in PORTS:
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 8400-8449")


@contextmanager
def receiving(port: int | None = None) -> Iterator[Receiver]:
    receiver = Receiver(port or free_port()).start()
    try:
        yield receiver
    finally:
        receiver.stop()
