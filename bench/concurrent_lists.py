"""The public case list against the API's list, at 10 concurrent users, through the server
``make serve`` runs (gunicorn.conf.py) on a released knowledge base.

    DATABASE_URL=postgres://user@host:5432/kb .venv/bin/python bench/concurrent_lists.py

The database must hold a release (``bench/scale.py`` measures it on its largest knowledge
base, after publishing it). Each user is a thread with its own connection that sends one
request after another, signed out; the two lists are measured in alternating rounds so
that other load on the machine falls on both alike. ``BENCH_PORT`` picks the port (else a
free one).
"""

from __future__ import annotations

import argparse
import http.client
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import log, p95, postgres_url  # noqa: E402

PATHS = {"page": "/cases/", "api": "/api/v1/cases/"}


def _free_port() -> int:
    if os.environ.get("BENCH_PORT"):
        return int(os.environ["BENCH_PORT"])
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(port: int, path: str) -> float:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        start = time.perf_counter()
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            raise SystemExit(f"GET {path}: HTTP {response.status}")
        return time.perf_counter() - start
    finally:
        connection.close()


def _round(port: int, path: str, users: int, requests: int) -> list[float]:
    """``users`` threads, each sending ``requests`` requests one after another."""
    times: list[float] = []
    lock = threading.Lock()

    def user() -> None:
        mine = [_get(port, path) for _ in range(requests)]
        with lock:
            times.extend(mine)

    threads = [threading.Thread(target=user) for _ in range(users)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return times


def measure(url: str, users: int = 10, requests: int = 10, rounds: int = 3) -> dict:
    """p50 and p95 (seconds) of each list at ``users`` concurrent users, through gunicorn
    with gunicorn.conf.py on the database at ``url``."""
    port = _free_port()
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "BIND": f"127.0.0.1:{port}",
        "SECRET_KEY": os.environ.get("SECRET_KEY", "claimsdb-benchmark-only-" + "x" * 40),
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "0",
        "SECURE_COOKIES": "0",
        "REQUEST_LOG_LEVEL": "WARNING",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    gunicorn = Path(sys.executable).parent / "gunicorn"
    with tempfile.TemporaryFile() as out:
        server = subprocess.Popen(
            [str(gunicorn), "-c", "gunicorn.conf.py"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            for _ in range(300):
                try:
                    _get(port, "/healthz")
                    break
                except (OSError, SystemExit):
                    time.sleep(0.1)
            for path in PATHS.values():  # every worker warmed up on both
                _round(port, path, users, 2)
            times: dict[str, list[float]] = {name: [] for name in PATHS}
            for _ in range(rounds):
                for name, path in PATHS.items():
                    times[name] += _round(port, path, users, requests)
        except BaseException:
            out.seek(0)
            log(out.read().decode(errors="replace")[-3000:])
            raise
        finally:
            os.killpg(server.pid, signal.SIGINT)
            server.wait(timeout=30)
    result = {}
    for name, measured in times.items():
        ordered = sorted(measured)
        result[name] = {"p50": ordered[len(ordered) // 2], "p95": p95(measured)}
    result["users"] = users
    result["requests"] = len(times["page"])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--requests", type=int, default=10, help="per user and round")
    parser.add_argument("--rounds", type=int, default=3)
    o = parser.parse_args()
    url = postgres_url("bench/concurrent_lists.py", "it measures the server on PostgreSQL")
    result = measure(url, o.users, o.requests, o.rounds)
    page, api = result["page"], result["api"]
    print(
        f"{o.users} users, {result['requests']} requests of each list: "
        f"GET /cases/ signed out p50 {page['p50'] * 1000:.1f} ms p95 {page['p95'] * 1000:.1f} ms; "
        f"GET /api/v1/cases/ p50 {api['p50'] * 1000:.1f} ms p95 {api['p95'] * 1000:.1f} ms; "
        f"p95 ratio {page['p95'] / api['p95']:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
