"""Imports as background jobs: queued over the API and the page, run by the worker, safe to
repeat, retry and crash."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command

from claimsdb.importers import jobs, storage
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
