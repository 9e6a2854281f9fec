"""No slow client holds a worker: 64 clients sending their bodies one byte every two seconds
to ``make serve`` while ``/healthz`` and a reader keep answering (docs/operations.md)."""

from __future__ import annotations

import copy
import http.client
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
from django.db import connection
from rest_framework.authtoken.models import Token

from claimsdb.services import bundle_load

from .support import ROOT, make_user

pytestmark = [
    pytest.mark.slow,
    pytest.mark.postgres(reason="make serve runs on PostgreSQL"),
    pytest.mark.django_db(transaction=True),  # the server reads what the test commits
]

SLOW_CLIENTS = 64
SLOW_SECONDS = 15  # how long the slow clients trickle while the readers are watched
WORKERS = 4


def free_port() -> int:
    """A free port; within ``CLAIMSDB_TEST_PORTS`` (``8300-8399``) when it is set."""
    low, _, high = os.environ.get("CLAIMSDB_TEST_PORTS", "0-0").partition("-")
    for port in range(int(low), int(high) + 1):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return probe.getsockname()[1]
    raise RuntimeError("no free port in CLAIMSDB_TEST_PORTS")


def database_url() -> str:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


class Server:
    """``make serve`` on a port of its own, with ``WORKERS`` workers."""

    def __init__(self, tmp_path: Path):
        self.port = free_port()
        self.log = tmp_path / "serve.log"
        env = {
            **{k: v for k, v in os.environ.items() if k not in ("DEBUG", "MAKEFLAGS")},
            "DATABASE_URL": database_url(),
            "SECRET_KEY": "slow-clients-" + "k" * 50,
            "ALLOWED_HOSTS": "127.0.0.1",
            "SECURE_SSL_REDIRECT": "0",
            "SECURE_COOKIES": "0",
            "BIND": f"127.0.0.1:{self.port}",
            "WEB_CONCURRENCY": str(WORKERS),
        }
        env.pop("DJANGO_SETTINGS_MODULE", None)
        self.out = self.log.open("w")
        self.process = subprocess.Popen(
            ["make", "--no-print-directory", "serve"],
            cwd=ROOT,
            env=env,
            stdout=self.out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_until_up(self, seconds: float = 40) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                if get(self.port, "/healthz", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"make serve did not come up:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGINT)  # gunicorn's quick shutdown
            self.process.wait(timeout=15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait(timeout=15)
        self.out.close()


def get(port: int, path: str, headers: dict | None = None, timeout: float = 5) -> tuple:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


class SlowClient:
    """Sends a request's head at once, then its declared body one byte at a time."""

    def __init__(self, port: int, path: str, headers: dict, length: int = 4096):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {length}"]
        head += [f"{name}: {value}" for name, value in headers.items()]
        self.sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        self.sent = 0

    def trickle(self) -> None:
        try:
            self.sock.sendall(b"x")
            self.sent += 1
        except OSError:
            pass

    def close(self) -> None:
        self.sock.close()


def test_slow_clients_hold_no_worker(tmp_path, roles_kept, seed_bundle):
    reviewer = make_user("reviewer", "reviewer")
    token = Token.objects.create(user=reviewer).key
    bundle_load(user=reviewer, bundle=copy.deepcopy(seed_bundle), summary="Seed")
    server = Server(tmp_path)
    slow: list[SlowClient] = []
    try:
        server.wait_until_up()
        for index in range(SLOW_CLIENTS):
            if index % 2:
                path, headers = "/api/v1/imports/", {"Authorization": f"Token {token}"}
            else:
                path, headers = "/accounts/login/", {}
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            slow.append(SlowClient(server.port, path, headers))
        stop = threading.Event()

        def trickle() -> None:
            while not stop.wait(2):
                for client in slow:
                    client.trickle()

        trickler = threading.Thread(target=trickle, daemon=True)
        trickler.start()
        answers: list[tuple[str, object]] = []
        slowest = 0.0
        deadline = time.monotonic() + SLOW_SECONDS
        while time.monotonic() < deadline:
            for path, headers in [
                ("/healthz", {}),
                ("/api/v1/releases/", {}),
                ("/api/v1/cases/", {"Authorization": f"Token {token}"}),
            ]:
                started = time.monotonic()
                try:
                    answers.append((path, get(server.port, path, headers)[0]))
                    slowest = max(slowest, time.monotonic() - started)
                except OSError as exc:
                    answers.append((path, f"{type(exc).__name__}: {exc}"))
            time.sleep(0.5)
        stop.set()
        trickler.join(5)
        failed = [(path, status) for path, status in answers if status != 200]
        assert not failed, f"{len(failed)} of {len(answers)} reads failed: {failed[:5]}"
        assert len(answers) >= 30
        print(f"{len(answers)} reads beside {SLOW_CLIENTS} slow clients, slowest {slowest:.3f} s")
        assert min(client.sent for client in slow) >= SLOW_SECONDS // 2 - 2  # still sending
    finally:
        for client in slow:
            client.close()
        server.stop()
