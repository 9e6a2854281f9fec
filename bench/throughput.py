"""Write throughput through gunicorn, against a hand-written floor (part of bench/scale.py).

``measure`` serves one knowledge base with gunicorn as ``make serve`` runs it
(gunicorn.conf.py, 4 workers × 2 threads, DEBUG off) and has 1, 2, 4 and 8 clients, each
on a thread of its own, PUT their own case again and again for a few seconds, each with
``If-Match`` the ETag of its previous write: writes per second (all clients together) and
each write's latency. The floor is the same number of clients doing by hand, with psycopg,
the transaction a write cannot do without: lock the ledger head row, update a case row,
insert a revision with the case's real snapshot, its SHA-256 and the chain hash, advance
the head, commit. Rounds interleave the two at every number of clients.

The server logs every write's time and the time it held the ledger lock
(``CLAIMSDB_WRITE_TIMING``, claimsdb/services/timing.py): the share of a write's time
spent holding the lock, as PostgreSQL sees the lock held (from ``SELECT … FOR UPDATE`` on
the head to the end of the transaction).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import http.client
import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
SUMMARY = quote("Benchmark write")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    """gunicorn serving ``url`` on ``port`` as ``make serve`` does, writes timed."""

    def __init__(self, url: str, port: int, timing: Path):
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "DJANGO_SETTINGS_MODULE": "claimsdb.settings",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "127.0.0.1",
            "SECURE_SSL_REDIRECT": "0",
            "SECURE_COOKIES": "0",
            "BIND": f"127.0.0.1:{port}",
            "WEB_CONCURRENCY": "4",
            "GUNICORN_THREADS": "2",
            "GUNICORN_LOG_LEVEL": "warning",
            "CLAIMSDB_WRITE_TIMING": str(timing),
        }
        env.pop("DEBUG", None)
        self.port = port
        self.process = subprocess.Popen(
            [str(Path(sys.executable).parent / "gunicorn"), "-c", "gunicorn.conf.py"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 90
        while True:
            try:
                status, _, _ = request(self.port, "GET", "/healthz", {})
                if status == 200:
                    return
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise SystemExit(f"gunicorn did not start on port {port}")
            time.sleep(0.25)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def request(
    port: int,
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes | None = None,
    connection: http.client.HTTPConnection | None = None,
) -> tuple[int, dict[str, str], bytes]:
    own = connection is None
    connection = connection or http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        for attempt in range(2):
            try:
                connection.request(method, path, body=body, headers=headers)
                response = connection.getresponse()
                data = response.read()
                return response.status, {k.lower(): v for k, v in response.getheaders()}, data
            except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
                # gunicorn closes a kept-alive connection idle for a few seconds: open anew
                connection.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")
    finally:
        if own:
            connection.close()


class Client:
    """One client writing one case through the API, each write based on the last."""

    def __init__(self, port: int, token: str, key: str):
        self.port = port
        self.key = key
        self.path = f"/api/v1/cases/{key}/"
        self.auth = {"Authorization": f"Token {token}", "Host": "127.0.0.1"}
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        status, headers, data = request(port, "GET", self.path, self.auth, None, self.connection)
        assert status == 200, (status, data[:500])
        self.document = json.loads(data)
        self.etag = headers["etag"]
        self.summary = self.document["summary"]
        self.count = 0

    def write(self) -> None:
        self.count += 1
        self.document["summary"] = f"{self.summary} [write {self.count}]"
        body = json.dumps(self.document).encode()
        headers = {**self.auth, "If-Match": self.etag, "Content-Type": "application/json"}
        status, answer, data = request(
            self.port, "PUT", f"{self.path}?summary={SUMMARY}", headers, body, self.connection
        )
        if status != 200:
            raise SystemExit(f"PUT {self.key} answered {status}: {data[:1000]!r}")
        self.etag = answer["etag"]


class FloorClient:
    """One client doing a write's unavoidable transaction by hand, on its own case."""

    def __init__(self, url: str, key: str, tables: dict[str, Any]):
        import psycopg

        self.key = key
        self.tables = tables
        self.connection = psycopg.connect(urlunsplit(urlsplit(url)._replace(scheme="postgresql")))
        with self.connection.cursor() as cursor:
            cursor.execute(
                f'SELECT {tables["columns_sql"]} FROM "{tables["revision"]}" '
                "WHERE record_kind = 'case' AND record_key = %s ORDER BY number DESC LIMIT 1",
                [key],
            )
            self.template = dict(zip(tables["columns"], cursor.fetchone(), strict=True))
        self.connection.commit()
        self.count = 0

    def write(self) -> None:
        from claimsdb.services.ledger import chain_hash

        self.count += 1
        t = self.tables
        snapshot = json.loads(self.template["snapshot"])
        snapshot["summary"] = f"{snapshot['summary'].split(' [floor')[0]} [floor {self.count}]"
        text = json.dumps(snapshot, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        digest = hashlib.sha256(text.encode()).hexdigest()
        with self.connection.cursor() as cursor:
            cursor.execute(f'SELECT number, chain_hash FROM "{t["head"]}" WHERE id = 1 FOR UPDATE')
            number, previous = cursor.fetchone()
            cursor.execute(
                f'UPDATE "{t["case"]}" SET summary = %s WHERE key = %s',
                [snapshot["summary"], self.key],
            )
            created_at = dt.datetime.now(dt.UTC)
            row = dict(self.template)
            row.update(
                number=number + 1,
                summary="Floor write",
                created_at=created_at,
                snapshot=text,
                snapshot_sha256=digest,
                previous_hash=previous,
            )
            row["chain_hash"] = chain_hash(
                previous_hash=previous,
                number=number + 1,
                record_kind="case",
                record_key=self.key,
                action=row["action"],
                material=row["material"],
                summary="Floor write",
                author_id=row["author_id"],
                created_at=created_at,
                snapshot_sha256=digest,
            )
            cursor.execute(t["insert"], [row[c] for c in t["columns"]])
            cursor.execute(
                f'UPDATE "{t["head"]}" SET number = %s, chain_hash = %s WHERE id = 1',
                [number + 1, row["chain_hash"]],
            )
        self.connection.commit()


def run_clients(clients: list, seconds: float) -> tuple[float, list[float]]:
    """Every client writing for ``seconds`` at once: writes per second, each latency."""
    barrier = threading.Barrier(len(clients) + 1)
    latencies: list[list[float]] = [[] for _ in clients]
    errors: list[BaseException] = []
    stop = [0.0]

    def run(index: int) -> None:
        try:
            barrier.wait()
            while time.perf_counter() < stop[0]:
                start = time.perf_counter()
                clients[index].write()
                latencies[index].append(time.perf_counter() - start)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(clients))]
    for thread in threads:
        thread.start()
    stop[0] = time.perf_counter() + seconds
    began = time.perf_counter()
    barrier.wait()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    if errors:
        raise errors[0]
    every = [latency for own in latencies for latency in own]
    return len(every) / elapsed, every


def floor_tables() -> dict[str, Any]:
    from django.db import connection

    from claimsdb.models import Case, LedgerHead, Revision

    columns = [
        f.column for f in Revision._meta.concrete_fields if f.column != Revision._meta.pk.column
    ]
    quoted = ", ".join(f'"{c}"' for c in columns)
    marks = ", ".join(["%s"] * len(columns))
    connection.close()
    return {
        "revision": Revision._meta.db_table,
        "head": LedgerHead._meta.db_table,
        "case": Case._meta.db_table,
        "columns": columns,
        "columns_sql": quoted,
        "insert": f'INSERT INTO "{Revision._meta.db_table}" ({quoted}) VALUES ({marks})',
    }


def measure(
    url: str,
    token: str,
    keys: list[str],
    floor_keys: list[str],
    writers: list[int],
    rounds: int,
    seconds: float,
    port: int,
) -> dict[str, Any]:
    """Interleaved rounds at each number of writers: claimsdb through gunicorn, then the
    floor. Returns, per number of writers, writes/s of each round, latencies and the
    seconds logged by the server (each write's time, its time holding the ledger lock)."""
    tables = floor_tables()
    results: dict[str, Any] = {
        str(n): {"rate": [], "latencies": [], "floor": [], "write": [], "held": []} for n in writers
    }
    with tempfile.TemporaryDirectory(prefix="claimsdb-writes-") as folder:
        timing = Path(folder) / "timing.log"
        timing.touch()
        server = Server(url, port, timing)
        try:
            clients = [Client(port, token, key) for key in keys[: max(writers)]]
            floors = [FloorClient(url, key, tables) for key in floor_keys[: max(writers)]]
            run_clients(clients[:1], min(seconds, 1.0))  # every worker's caches warmed up
            for _ in range(rounds):
                for n in writers:
                    at = timing.stat().st_size
                    rate, latencies = run_clients(clients[:n], seconds)
                    time.sleep(0.2)  # the last lines of the log written
                    with timing.open() as log:
                        log.seek(at)
                        lines = [line.split() for line in log.read().splitlines()]
                    entry = results[str(n)]
                    entry["rate"].append(rate)
                    entry["latencies"] += latencies
                    entry["write"] += [float(total) for total, _ in lines]
                    entry["held"] += [float(held) for _, held in lines]
                    entry["floor"].append(run_clients(floors[:n], seconds)[0])
        finally:
            server.stop()
    return results


def summary(results: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per number of writers: median writes/s, p95 latency, median floor writes/s, and
    the share of the writes' time (summed) spent holding the ledger lock."""
    from bench.harness import p95

    table = {}
    for n, entry in results.items():
        table[n] = {
            "rate": statistics.median(entry["rate"]),
            "p95": p95(entry["latencies"]),
            "floor": statistics.median(entry["floor"]),
            "held_share": sum(entry["held"]) / sum(entry["write"]),
            "held_ms": statistics.median(entry["held"]) * 1000,
            "write_ms": statistics.median(entry["write"]) * 1000,
        }
    return table
