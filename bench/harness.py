"""What the benchmarks share: Django in a measuring process, child processes that each make
one measurement, throwaway PostgreSQL databases, timings and peak memory.

The benchmarks run as scripts (``python bench/scale.py``) and import this module as
``bench.harness``, with the repository's root on ``sys.path``.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/claimsdb"
POSTGRES_SCHEMES = {"postgres", "postgresql", "pgsql"}


def postgres_url(script: str, why: str) -> str:
    """``DATABASE_URL`` (or the local default); a benchmark measures PostgreSQL, so any other
    database ends the run with status 2."""
    url = os.environ.get("DATABASE_URL") or DEFAULT_URL
    if urlsplit(url).scheme not in POSTGRES_SCHEMES:
        print(f"{script} needs DATABASE_URL=postgres://… ({why})", file=sys.stderr)
        raise SystemExit(2)
    os.environ["DATABASE_URL"] = url
    return url


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "claimsdb.settings")
    os.environ.setdefault("SECRET_KEY", "claimsdb-benchmark-only-" + "x" * 40)
    hosts = os.environ.get("ALLOWED_HOSTS", "")
    if "testserver" not in hosts.split(","):  # the in-process test client's host
        os.environ["ALLOWED_HOSTS"] = f"{hosts},testserver" if hosts else "testserver"
    import django

    django.setup()


def maxrss_bytes() -> int:
    # Linux reports kilobytes, macOS bytes.
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024


def timed(function: Callable[[], Any], repeats: int) -> list[float]:
    """Seconds of ``repeats`` calls of ``function``, after one that warms the caches up."""
    function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return times


def p95(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- child processes: one measurement each --------------------------------------------------


def run_child(script: str, url: str, kind: str, *args: Any) -> dict:
    """Run ``script --child kind '<args as JSON>'`` on the database at ``url`` and return the
    JSON object it prints last; a failed child ends the run with its error output."""
    result = subprocess.run(
        [sys.executable, script, "--child", kind, json.dumps(list(args))],
        env={**os.environ, "DATABASE_URL": url},
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise SystemExit(f"measurement {kind} {args} failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def serve_child(children: dict[str, Callable[..., dict]], kind: str, args: str) -> int:
    """The child's side of ``run_child``: make the measurement, print it as JSON."""
    print(json.dumps(children[kind](*json.loads(args))))
    return 0


# --- throwaway databases --------------------------------------------------------------------


class Databases:
    """Throwaway databases named ``<prefix>_<name>``: migrated ones, and copies of them (or of
    one another), all dropped by ``drop_all``, also when a run fails."""

    def __init__(self, url: str, prefix: str):
        import psycopg

        self.url = url
        self.prefix = prefix
        parts = urlsplit(url)
        self.admin = psycopg.connect(
            urlunsplit(parts._replace(scheme="postgresql", path="/postgres")), autocommit=True
        )
        self.made: list[str] = []

    def url_of(self, name: str) -> str:
        return urlunsplit(urlsplit(self.url)._replace(path="/" + name))

    def migrated(self, name: str) -> str:
        """A new, migrated database; Django's connection in this process is left on it."""
        from django.db import connection

        full = f"{self.prefix}_{name}"
        self.made.append(full)
        connection.settings_dict["TEST"]["NAME"] = full
        connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
        return self.url_of(full)

    def copy(self, name: str, template: str) -> str:
        from psycopg import errors, sql

        full = f"{self.prefix}_{name}"
        statement = sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
            sql.Identifier(full), sql.Identifier(template)
        )
        for attempt in range(40):
            try:
                self.admin.execute(statement)
                break
            except errors.ObjectInUse:
                # a child that just exited may still be leaving the template database
                if attempt == 39:
                    raise
                time.sleep(0.5)
        self.made.append(full)
        return self.url_of(full)

    def drop(self, name: str) -> None:
        from psycopg import sql

        full = name if name.startswith(self.prefix) else f"{self.prefix}_{name}"
        self.admin.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(full))
        )
        if full in self.made:
            self.made.remove(full)

    def analyze(self, url: str) -> None:
        """Table statistics, as autovacuum would gather them after a load (a server may run
        without autovacuum, as test servers often do; the planner then guesses)."""
        import psycopg

        target = urlsplit(url)._replace(scheme="postgresql")
        with psycopg.connect(urlunsplit(target), autocommit=True) as connection:
            connection.execute("ANALYZE")

    def drop_all(self) -> None:
        for name in reversed(list(self.made)):
            self.drop(name)
        self.admin.close()
