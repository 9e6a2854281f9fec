"""The job worker on PostgreSQL: it beats through an import's storing pass (so a requeue
never takes a live job), and it survives the loss of its database connection."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.db import connection

from claimsdb.importers import jobs, storage
from claimsdb.models import ImportReport, ReproductionRun

from .support import ROOT, api_client

VALID = ROOT / "fixtures" / "repro" / "valid" / "valid-small.json"
NO_TRIALS = ROOT / "fixtures" / "repro" / "valid" / "valid-no-trials.json"
API = "/api/v1/imports/"
WORKER_NAME = "claimsdb-test-worker"

pytestmark = [
    pytest.mark.postgres(reason="beats from another connection during a write need PostgreSQL"),
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("spool"),
]


def _queue(client, path: Path) -> int:
    with path.open("rb") as handle:
        response = client.post(API + "?background=true", {"file": handle}, format="multipart")
    assert response.status_code == 202, response.content
    return response.json()["id"]


def _in_another_thread(call):
    """``call()`` on a connection of its own, as another process would run it."""
    result: list = []

    def run():
        from django.db import connection as own

        try:
            result.append(call())
        finally:
            own.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=30)
    return result[0]


def test_a_job_beats_through_its_storing_pass_and_is_never_requeued(
    seeded, analyst, monkeypatch, settings
):
    settings.IMPORT_HEARTBEAT_SECONDS = 0.05
    report_id = _queue(api_client(analyst), VALID)
    seen: dict = {}
    insert_rows = storage.insert_rows

    def storing(rows):
        # inside the import's transaction, with the ledger locked: what others see now
        assert connection.in_atomic_block
        stored = insert_rows(rows)
        time.sleep(0.6)  # a long storing pass
        seen["beat"] = _in_another_thread(
            lambda: ImportReport.objects.get(pk=report_id).heartbeat_at
        )
        seen["requeued"] = _in_another_thread(
            lambda: jobs.import_requeue(dead=dt.timedelta(seconds=0.4))
        )
        return stored

    monkeypatch.setattr(storage, "insert_rows", storing)
    said = jobs.run_import_job.call(report_id)
    assert said.endswith(": imported"), said
    assert seen["requeued"] == []  # alive: untouched, though its import took longer
    assert dt.datetime.now(dt.UTC) - seen["beat"] < dt.timedelta(seconds=5)
    row = ImportReport.objects.get(pk=report_id)
    assert (row.outcome, row.attempts) == ("imported", 1)


def _worker_backends() -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND datname = "
            "current_database()",
            [WORKER_NAME],
        )
        return [pid for (pid,) in cursor.fetchall()]


def _wait_for(predicate, what: str, seconds: float = 40) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"not within {seconds} s: {what}")


def _maintenance(sql: str) -> None:
    """Run ``sql`` from the server's maintenance database (a database cannot refuse
    connections to itself from one of its own)."""
    import psycopg

    database = connection.settings_dict
    with psycopg.connect(
        host=database["HOST"] or "127.0.0.1",
        port=database["PORT"] or 5432,
        user=database["USER"],
        dbname="postgres",
        autocommit=True,
    ) as maintenance:
        maintenance.execute(sql)


def _outcome(report_id: int) -> str:
    return ImportReport.objects.get(pk=report_id).outcome


def test_the_worker_survives_the_loss_of_its_database_connection(seeded, analyst, settings):
    client = api_client(analyst)
    database = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "claimsdb.test_settings",
        "DATABASE_URL": (
            f"postgres://{database['USER']}@{database['HOST'] or '127.0.0.1'}:"
            f"{database['PORT'] or 5432}/{database['NAME']}?application_name={WORKER_NAME}"
        ),
        "IMPORT_SPOOL_DIR": settings.IMPORT_SPOOL_DIR,
        "LOG_LEVEL": "WARNING",
    }
    worker = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "db_worker",
            "--no-reload",
            "--no-startup-delay",
            "--interval",
            "0.2",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        first = _queue(client, VALID)
        _wait_for(lambda: _outcome(first) == "imported", "the first import")
        # the database goes away, as in a restart: the worker's connections are killed and
        # new ones refused for a while (this test database only; the server runs on)
        name = connection.settings_dict["NAME"]
        _maintenance(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        try:
            with connection.cursor() as cursor:
                for pid in _worker_backends():
                    cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
            time.sleep(2.5)
            assert worker.poll() is None, "the worker exited while its database was away"
        finally:
            _maintenance(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')

        second = _queue(client, NO_TRIALS)
        _wait_for(lambda: _outcome(second) == "imported", "the import after the loss")
        assert worker.poll() is None, "the worker exited"
        assert ReproductionRun.objects.count() == 2
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            output, _ = worker.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            output, _ = worker.communicate()
    assert "lost its database" in output, output
