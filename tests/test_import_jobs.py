"""Imports as background jobs: queued over the API and the page, run by the worker, safe to
repeat, retry and crash."""

from __future__ import annotations

import datetime as dt
import io
import logging
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import OperationalError, ProgrammingError
from django.utils import timezone
from django_tasks_db.management.commands.db_worker import Worker

from claimsdb.importers import jobs, storage
from claimsdb.importers import worker as worker_module
from claimsdb.importers.worker import RecoveringWorker
from claimsdb.models import ImportReport, ReproductionRun, Revision, TrialRow

from .support import ROOT, api_client, signed_in

VALID = ROOT / "fixtures" / "repro" / "valid" / "valid-small.json"
INVALID = ROOT / "fixtures" / "repro" / "invalid" / "counter-disagrees-with-rows.json"
API = "/api/v1/imports/"

# jobs are queued when writes commit
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("spool")]


@pytest.fixture
def api(seeded, analyst):
    return api_client(analyst)


def upload(client, path: Path, **query):
    with path.open("rb") as handle:
        return client.post(
            API + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else ""),
            {"file": handle},
            format="multipart",
        )


def work() -> None:
    """What `manage.py db_worker` does, until the queue is empty."""
    call_command("db_worker", "--batch", "--no-startup-delay", "--interval", "0", verbosity=0)


def test_a_queued_import_answers_202_and_the_worker_imports_it(api, spool):
    response = upload(api, VALID, background="true")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["outcome"] == "queued"
    assert response["Location"] == body["url"]
    assert api.get(body["url"]).json()["outcome"] == "queued"
    assert len(list(spool.iterdir())) == 1
    assert not ReproductionRun.objects.exists()

    work()
    done = api.get(body["url"]).json()
    assert done["outcome"] == "imported", done
    assert done["revision"] == Revision.objects.latest("number").number
    assert done["run_url"]
    run = ReproductionRun.objects.get(run_id=done["run_id"])
    assert TrialRow.objects.filter(scenario__run=run).count() == done["trial_rows"] > 0
    assert list(spool.iterdir()) == []  # the stored upload is gone once imported
    assert ImportReport.objects.count() == 1  # the queued report became the import's report


def test_uploads_over_the_threshold_are_queued_and_small_ones_are_not(api, settings):
    assert upload(api, VALID).status_code == 201  # small: imported while the request waits
    settings.IMPORT_BACKGROUND_BYTES = VALID.stat().st_size - 1
    response = upload(api, VALID, replace="true")
    assert response.status_code == 202
    work()
    assert api.get(response.json()["url"]).json()["outcome"] == "unchanged"


def test_the_same_file_is_queued_once_and_a_job_runs_once(api):
    first = upload(api, VALID, background="true").json()
    second = upload(api, VALID, background="true").json()
    assert second["id"] == first["id"]  # already waiting: no second job
    work()
    report_id = first["id"]
    revisions = Revision.objects.count()
    # a job delivered again after it finished does nothing
    assert "nothing to do" in jobs.run_import_job.call(report_id)
    assert Revision.objects.count() == revisions
    # queued again later, the same file is a no-op import, as every import is
    again = upload(api, VALID, background="true").json()
    assert again["id"] != report_id
    work()
    assert api.get(again["url"]).json()["outcome"] == "unchanged"
    assert Revision.objects.count() == revisions


def test_a_refused_file_is_reported_with_its_problems(api):
    body = upload(api, INVALID, background="true").json()
    work()
    report = api.get(body["url"]).json()
    assert report["outcome"] == "refused"
    assert report["problems"] and all(p["path"] for p in report["problems"])
    assert not ReproductionRun.objects.exists()


def test_a_job_that_dies_mid_import_leaves_nothing_and_can_be_retried(api, monkeypatch, spool):
    calls = {"n": 0}

    def crash(*args, **kwargs):
        calls["n"] += 1
        raise RuntimeError("worker lost its disk mid-import")

    monkeypatch.setattr(storage, "insert_rows", crash)  # the import's last step
    body = upload(api, VALID, background="true").json()
    revisions = Revision.objects.count()
    work()
    failed = api.get(body["url"]).json()
    assert calls["n"] == 1
    assert failed["outcome"] == "failed"
    assert "nothing was written" in failed["message"]
    assert not ReproductionRun.objects.exists() and not TrialRow.objects.exists()
    assert Revision.objects.count() == revisions
    assert len(list(spool.iterdir())) == 1  # kept for the retry

    monkeypatch.undo()
    out = io.StringIO()
    call_command("requeue_imports", stdout=out)
    assert f"requeued: {body['id']}" in out.getvalue()
    work()
    assert api.get(body["url"]).json()["outcome"] == "imported"
    assert list(spool.iterdir()) == []


def test_an_import_whose_worker_died_is_requeued_when_stuck(api):
    body = upload(api, VALID, background="true").json()
    # the worker claimed it and died: the report stays "running", with no progress
    ImportReport.objects.filter(pk=body["id"]).update(outcome="running", progress={})
    assert api.get(body["url"]).json()["outcome"] == "running"
    out = io.StringIO()
    call_command("requeue_imports", stdout=out)
    assert "nothing to requeue" in out.getvalue()  # not stuck long enough to tell
    call_command("requeue_imports", "--stuck-minutes", "0", stdout=out)
    assert f"requeued: {body['id']}" in out.getvalue()
    work()
    assert api.get(body["url"]).json()["outcome"] == "imported"


def test_a_body_that_is_not_an_object_is_refused_at_once(api, spool):
    response = api.post(
        API + "?background=true", data=b"[null, null]", content_type="application/json"
    )
    assert response.status_code == 400
    assert all(e["code"].startswith("repro.") for e in response.json()["errors"])
    assert not spool.exists() or list(spool.iterdir()) == []
    assert not ImportReport.objects.filter(outcome="queued").exists()


def test_a_viewer_cannot_queue_an_import(seeded, viewer, spool):
    response = upload(api_client(viewer), VALID, background="true")
    assert response.status_code == 403
    assert not spool.exists() or list(spool.iterdir()) == []


def test_the_upload_page_queues_a_large_file(seeded, analyst, settings):
    settings.IMPORT_BACKGROUND_BYTES = 100
    client = signed_in(analyst)
    with VALID.open("rb") as handle:
        response = client.post("/imports/", {"file": handle, "summary": ""})
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    assert "Waiting for a worker" in page
    work()
    page = client.get(response["Location"]).content.decode()
    assert "Imported" in page


# --- heartbeats: a dead job is told by its silence, a live one is never touched ----------------

T0 = dt.datetime(2026, 12, 3, 12, 0, tzinfo=dt.UTC)


def at(seconds: float):
    return lambda: T0 + dt.timedelta(seconds=seconds)


def test_a_job_is_dead_when_its_heartbeat_is_older_than_the_threshold(api, settings):
    settings.IMPORT_DEAD_SECONDS = 120
    body = upload(api, VALID, background="true").json()
    assert jobs._claim(body["id"], clock=at(0))  # a worker claimed it at T0
    row = ImportReport.objects.get(pk=body["id"])
    assert (row.outcome, row.heartbeat_at, row.attempts) == ("running", T0, 1)

    assert jobs.import_requeue(clock=at(119)) == []  # silent, but not for long enough
    assert jobs.Heartbeat(body["id"], clock=at(100)).beat()  # it beats: alive
    assert jobs.import_requeue(clock=at(219)) == []
    assert jobs.import_requeue(stuck_minutes=1, clock=at(159)) == []
    # silent for longer than the threshold: its job is dead
    assert jobs.import_requeue(stuck_minutes=1, clock=at(161)) == [body["id"]]
    row.refresh_from_db()
    assert (row.outcome, row.heartbeat_at) == ("queued", None)
    assert not jobs.Heartbeat(body["id"], clock=at(170)).beat()  # the dead job's beat is void
    work()
    assert api.get(body["url"]).json()["outcome"] == "imported"


def test_the_requeue_command_goes_by_the_heartbeat_not_by_age(api):
    body = upload(api, VALID, background="true").json()
    jobs._claim(body["id"])
    # an import running for an hour, whose job beat a moment ago, is alive
    ImportReport.objects.filter(pk=body["id"]).update(
        created_at=timezone.now() - dt.timedelta(hours=1),
        progress={
            "phase": "storing",
            "updated_at": (timezone.now() - dt.timedelta(hours=1)).isoformat(),
        },
    )
    out = io.StringIO()
    call_command("requeue_imports", "--stuck-minutes", "0.5", stdout=out)
    assert "nothing to requeue" in out.getvalue()
    ImportReport.objects.filter(pk=body["id"]).update(
        heartbeat_at=timezone.now() - dt.timedelta(seconds=40)
    )
    call_command("requeue_imports", "--stuck-minutes", "0.5", stdout=out)
    assert f"requeued: {body['id']}" in out.getvalue()


def test_the_worker_requeues_a_dead_import_a_few_times_at_most(api, settings):
    settings.IMPORT_DEAD_SECONDS = 60
    settings.IMPORT_MAX_ATTEMPTS = 2
    body = upload(api, VALID, background="true").json()
    failed = upload(api, INVALID, background="true").json()
    ImportReport.objects.filter(pk=failed["id"]).update(outcome="failed")
    for attempt in (1, 2):
        assert jobs._claim(body["id"], clock=at(0))
        assert ImportReport.objects.get(pk=body["id"]).attempts == attempt
        assert jobs.requeue_dead_imports(clock=at(59)) == []
        requeued = jobs.requeue_dead_imports(clock=at(61))
        # the failed import waits for someone to look at it
        assert requeued == ([body["id"]] if attempt == 1 else [])
    assert ImportReport.objects.get(pk=body["id"]).outcome == "running"
    assert jobs.import_requeue(ids=[body["id"]], clock=at(61)) == [body["id"]]  # by hand


def test_a_report_is_written_once_by_the_job_that_wrote_its_revision(api, tmp_path):
    """A job thought dead during its storing pass was queued again and a second job claimed
    the report; the first then wrote the revision and the report. The second finds the run
    already there: it must not overwrite the report as "unchanged"."""
    body = upload(api, VALID, background="true").json()
    second = ImportReport.objects.select_related("user").get(pk=body["id"])
    kept = tmp_path / "the second job's open file.json"
    kept.write_bytes(Path(second.stored_file).read_bytes())
    second.stored_file = str(kept)

    work()  # the first job: writes the run, its revision and the report
    first = api.get(body["url"]).json()
    assert first["outcome"] == "imported" and first["revision"]
    revisions = Revision.objects.count()

    said = jobs.run_claimed_import(second)  # the second job, past its claim
    assert "finished by another job (imported)" in said
    after = api.get(body["url"]).json()
    assert (after["outcome"], after["revision"]) == ("imported", first["revision"])
    assert after["message"] == first["message"]
    assert Revision.objects.count() == revisions
    # nor does a second job that fails overwrite it
    second.stored_file = str(tmp_path / "gone.json")
    with pytest.raises(FileNotFoundError):
        jobs.run_claimed_import(second)
    assert api.get(body["url"]).json()["outcome"] == "imported"


# --- the worker: a lost database is waited for -------------------------------------------------


class _Loses:
    """Stands in for django-tasks' loop: loses the database ``times`` times, then returns."""

    def __init__(self, times: int, error: Exception | None = None):
        self.times = times
        self.error = error or OperationalError("server closed the connection")
        self.calls = 0

    def __call__(self, worker) -> None:
        self.calls += 1
        if self.calls <= self.times:
            raise self.error


def _worker(batch: bool = True, **options) -> RecoveringWorker:
    return RecoveringWorker(
        queue_names=["default"],
        interval=0,
        batch=batch,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id="test-worker",
        excluded_queue_names=[],
        **options,
    )


def test_the_worker_reconnects_with_backoff_when_its_database_is_lost(
    api, monkeypatch, settings, caplog
):
    settings.WORKER_RECONNECT_SECONDS = (0.5, 4)
    loses = _Loses(5)
    monkeypatch.setattr(Worker, "run", lambda self: loses(self))
    reaped = []
    monkeypatch.setattr(worker_module, "requeue_dead_imports", lambda: reaped.append(1))
    waits: list[float] = []
    now = [0.0]
    worker = _worker(sleep=waits.append, clock=lambda: now[0], batch=False, reap_every=0)
    settings.WEBHOOKS_POLL_SECONDS = 0
    with caplog.at_level(logging.WARNING, logger="claimsdb.worker"):
        worker.run()
    assert waits == [0.5, 1, 2, 4, 4]  # doubling, up to the last, for as long as it takes
    assert loses.calls == 6 and worker.reconnects == 5
    assert len(reaped) == 6  # dead imports are looked for each time it (re)starts
    assert "lost its database (OperationalError: server closed the connection)" in caplog.text

    # once it ran well for longer than the longest wait, the wait starts small again
    waits.clear()
    loses.calls, loses.times = 0, 2

    def lose_after_a_while(worker):
        now[0] += 10
        loses(worker)

    monkeypatch.setattr(Worker, "run", lose_after_a_while)
    worker.run()
    assert waits == [0.5, 0.5]


def test_a_batch_run_ends_once_it_has_waited_the_longest_wait(monkeypatch, settings):
    # a --batch run (cron, a script) must end: its jobs stay queued for the next one
    settings.WORKER_RECONNECT_SECONDS = (0.5, 4)
    loses = _Loses(100)
    monkeypatch.setattr(Worker, "run", lambda self: loses(self))
    monkeypatch.setattr(worker_module, "requeue_dead_imports", lambda: None)
    waits: list[float] = []
    with pytest.raises(OperationalError):
        _worker(sleep=waits.append, clock=lambda: 0.0).run()
    assert waits == [0.5, 1, 2, 4]


def test_the_worker_still_stops_on_errors_that_are_not_a_lost_connection(monkeypatch):
    loses = _Loses(1, ProgrammingError("no such table"))
    monkeypatch.setattr(Worker, "run", lambda self: loses(self))
    monkeypatch.setattr(worker_module, "requeue_dead_imports", lambda: None)
    with pytest.raises(ProgrammingError):
        _worker(sleep=lambda _: None).run()
