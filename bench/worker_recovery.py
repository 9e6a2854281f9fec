"""How the background-job worker recovers from faults, measured on PostgreSQL.

    DATABASE_URL=postgres://user@host:5432/claimsdb .venv/bin/python bench/worker_recovery.py

Sets up a throwaway database (``<name>_recovery_<pid>_kb``, migrated, with the seed
fixture), runs ``manage.py db_worker`` against it as a separate process, and measures
three faults (docs/operations.md, "What survives what"):

* **the database away while the worker idles**: connections to the database refused and
  the worker's own killed for ``--away`` seconds (as in a restart; the server itself runs
  on): how long after the database is back the worker is connected again, and an import
  queued then is done;
* **the database away during an import**: the same, in the storing pass of an import of
  ``--rows`` trial rows: how long until that import is imported after all;
* **the worker killed (SIGKILL) during an import**, and a new worker started: how long
  until the dead job's import is queued again and imported.

``IMPORT_DEAD_SECONDS`` (``--dead``) and ``IMPORT_HEARTBEAT_SECONDS`` (``--beat``) are given
to the worker; the recovery of a dead job follows them. The database is dropped at the end.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import Databases, postgres_url, setup_django  # noqa: E402

WORKER = "claimsdb-bench-worker"


class Worker:
    """``manage.py db_worker`` on the benchmark's database, its output in a file."""

    def __init__(self, url: str, spool: Path, log: Path, options: argparse.Namespace):
        env = {
            **os.environ,
            "DATABASE_URL": f"{url}?application_name={WORKER}",
            "SECRET_KEY": os.environ.get("SECRET_KEY", "claimsdb-benchmark-only-" + "x" * 40),
            "IMPORT_SPOOL_DIR": str(spool),
            "IMPORT_DEAD_SECONDS": str(options.dead),
            "IMPORT_HEARTBEAT_SECONDS": str(options.beat),
            "LOG_LEVEL": "WARNING",
        }
        self.log = log.open("a")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "db_worker",
                "--no-reload",
                "--no-startup-delay",
                "--interval",
                "0.5",
            ],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


def _backends(databases: Databases, name: str) -> list[int]:
    rows = databases.admin.execute(
        "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND datname = %s",
        [WORKER, name],
    ).fetchall()
    return [pid for (pid,) in rows]


def _away(databases: Databases, name: str, seconds: float) -> float:
    """Refuse connections to ``name`` and kill the worker's for ``seconds``; returns the
    moment it is back."""
    from psycopg import sql

    databases.admin.execute(
        sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(sql.Identifier(name))
    )
    try:
        for pid in _backends(databases, name):
            databases.admin.execute("SELECT pg_terminate_backend(%s)", [pid])
        time.sleep(seconds)
    finally:
        databases.admin.execute(
            sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS true").format(sql.Identifier(name))
        )
    return time.monotonic()


def _wait(predicate, what: str, limit: float = 600) -> float:
    start = time.monotonic()
    while time.monotonic() - start < limit:
        if predicate():
            return time.monotonic()
        time.sleep(0.1)
    raise SystemExit(f"not within {limit:.0f} s: {what}")


def _outcome(report_id: int) -> tuple[str, str]:
    from claimsdb.models import ImportReport

    outcome, progress = ImportReport.objects.values_list("outcome", "progress").get(pk=report_id)
    return outcome, (progress or {}).get("phase", "")


def _queue(user, path: Path) -> int:
    from claimsdb.importers.jobs import import_enqueue

    with path.open("rb") as upload:
        report = import_enqueue(user=user, upload=upload, filename=path.name)
    assert report.id is not None
    return report.id


def _seed():
    import json

    from django.contrib.auth.models import Group, User

    from claimsdb.services import bundle_load

    reviewer = User.objects.create_user("bench-reviewer")
    reviewer.groups.add(Group.objects.get(name="reviewer"))
    analyst = User.objects.create_user("bench-analyst")
    analyst.groups.add(Group.objects.get(name="analyst"))
    bundle = json.loads((ROOT / "fixtures" / "seed.json").read_text(encoding="utf-8"))
    bundle_load(user=reviewer, bundle=bundle, summary="Seed for the benchmark")
    return analyst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--away", type=float, default=5.0)
    parser.add_argument("--dead", type=float, default=20.0)
    parser.add_argument("--beat", type=float, default=2.0)
    options = parser.parse_args()
    url = postgres_url("bench/worker_recovery.py", "the worker's faults are PostgreSQL's")
    setup_django()
    prefix = f"{urlsplit(url).path.lstrip('/')}_recovery_{os.getpid()}"
    databases = Databases(url, prefix)
    name = f"{prefix}_kb"
    try:
        kb = databases.migrated("kb")
        os.environ["DATABASE_URL"] = kb
        analyst = _seed()
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch)
            from django.conf import settings

            from claimsdb.importers.synthetic import write_results_file

            settings.IMPORT_SPOOL_DIR = str(folder / "spool")
            print(f"writing {options.rows:,} trial rows …", flush=True)
            files = {}
            for n in range(3):
                files[n] = folder / f"run-{n}.json"
                write_results_file(files[n], rows=options.rows, run_id=f"recovery-{n}")
            small = ROOT / "fixtures" / "repro" / "valid" / "valid-no-trials.json"
            log = folder / "worker.log"
            results = {}

            worker = Worker(kb, folder / "spool", log, options)
            try:
                _wait(lambda: _backends(databases, name), "the worker connected")
                back = _away(databases, name, options.away)
                connected = _wait(lambda: _backends(databases, name), "the worker back")
                report = _queue(analyst, small)
                done = _wait(lambda: _outcome(report)[0] == "imported", "the import after")
                results["idle: reconnected after the database was back"] = connected - back
                results["idle: a new import imported, after the database was back"] = done - back

                report = _queue(analyst, files[0])
                _wait(lambda: _outcome(report) == ("running", "storing"), "the storing pass")
                back = _away(databases, name, options.away)
                done = _wait(lambda: _outcome(report)[0] == "imported", "the interrupted import")
                results[
                    "mid-import: the interrupted import imported, after the database was back"
                ] = done - back
                survived = worker.process.poll() is None
            finally:
                worker.stop()

            worker = Worker(kb, folder / "spool", log, options)
            report = _queue(analyst, files[1])
            _wait(lambda: _outcome(report) == ("running", "storing"), "the storing pass")
            worker.kill()
            killed = time.monotonic()
            worker = Worker(kb, folder / "spool", log, options)
            try:
                queued = _wait(lambda: _outcome(report)[0] != "running", "the dead job requeued")
                done = _wait(lambda: _outcome(report)[0] == "imported", "the requeued import")
                results["killed: the dead job's import queued again, after the kill"] = (
                    queued - killed
                )
                results["killed: the dead job's import imported, after the kill"] = done - killed
            finally:
                worker.stop()
            lost = log.read_text().count("lost its database")

        from claimsdb.integrity import verify_history

        problems = verify_history()
        print(
            f"\nworker: IMPORT_DEAD_SECONDS={options.dead:g}, IMPORT_HEARTBEAT_SECONDS="
            f"{options.beat:g}; database away {options.away:g} s; {options.rows:,} trial rows"
        )
        for what, seconds in results.items():
            print(f"  {what}: {seconds:.1f} s")
        print(
            f"  the worker logged {lost} lost connection(s) and "
            + ("ran on throughout" if survived else "EXITED")
        )
        print(f"  verify_history: {'ok' if not problems else problems[:3]}")
        return 1 if problems or not survived else 0
    finally:
        from django.db import connection

        connection.close()
        databases.drop_all()


if __name__ == "__main__":
    raise SystemExit(main())
