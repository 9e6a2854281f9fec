""" "Import it now": a dry run's stored file imported without a new upload; the links of a
report; the runs listed on each claim card of the record page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from claimsdb.importers import jobs
from claimsdb.importers.repro_results import ResultsImporter
from claimsdb.models import ImportReport, ReproductionRun, Revision

from .repro_examples import FIXTURES, VALID_SMALL
from .support import signed_in

pytestmark = pytest.mark.usefixtures("spool")  # dry runs keep their files

NO_TRIALS = FIXTURES / "valid" / "valid-no-trials.json"
RUN = "pd-abort-h200x2-20261021-0007"
LATER_RUN = "pd-abort-h200x2-20261022-0001"


def dry_run(client: Client, path: Path = VALID_SMALL, **fields) -> ImportReport:
    with path.open("rb") as handle:
        response = client.post("/imports/", {"file": handle, "dry_run": "on", **fields})
    assert response.status_code == 302
    return ImportReport.objects.get(pk=response["Location"].strip("/").split("/")[-1])


def test_a_dry_run_keeps_its_file_and_offers_to_import_it(seeded, analyst, spool):
    client = signed_in(analyst)
    row = dry_run(client, replace="on", summary="Lab rerun")

    assert row.outcome == "would_import"
    stored = Path(row.stored_file)
    assert stored.parent == spool and stored.read_bytes() == VALID_SMALL.read_bytes()
    assert row.options == {"replace": True, "summary": "Lab rerun"}
    page = client.get(f"/imports/{row.pk}/").content.decode()
    assert f'action="/imports/{row.pk}/import/"' in page
    assert "Import it now</button>" in page
    assert 'value="Lab rerun"' in page  # the summary, to edit


def test_import_now_imports_the_stored_file_without_an_upload(seeded, analyst, spool):
    client = signed_in(analyst, enforce_csrf_checks=True)
    page = client.get("/imports/").content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    row = dry_run(client, csrfmiddlewaretoken=token, summary="From the dry run")
    assert not ReproductionRun.objects.exists()
    url = f"/imports/{row.pk}/import/"
    assert client.post(url, {"summary": "x"}).status_code == 403  # CSRF
    assert client.get(url).status_code == 405

    response = client.post(url, {"summary": "Edited summary", "csrfmiddlewaretoken": token})

    new = ImportReport.objects.exclude(pk=row.pk).get()
    assert response.status_code == 302 and response["Location"] == f"/imports/{new.pk}/"
    assert new.outcome == "imported" and not new.dry_run
    assert new.file_sha256 == row.file_sha256 and new.filename == row.filename
    assert new.options == {"replace": False, "summary": "Edited summary", "from_dry_run": row.pk}
    run = ReproductionRun.objects.get(run_id=RUN)
    # the run is named by the file's content, the report row keeps the bytes' hash
    assert run.file_sha256 == row.report["sha256"] == new.report["sha256"]
    assert Revision.objects.get(number=new.revision_number).summary == "Edited summary"
    row.refresh_from_db()
    assert row.options["imported_as"] == new.pk
    assert row.stored_file == "" and not list(spool.iterdir())  # the dry run is spent
    report = client.get(response["Location"]).content.decode()
    assert f'href="/imports/{row.pk}/"' in report  # back to the dry run
    dry = client.get(f"/imports/{row.pk}/").content.decode()
    assert f'href="/imports/{new.pk}/"' in dry and "Import it now</button>" not in dry


def test_the_same_options_but_the_dry_run(seeded, analyst):
    client = signed_in(analyst)
    ResultsImporter(user=analyst).import_path(VALID_SMALL)
    replacement = FIXTURES / "db" / "replacement.json"
    row = dry_run(client, replacement, replace="on")
    assert row.outcome == "would_replace"

    client.post(f"/imports/{row.pk}/import/", {"summary": ""})

    new = ImportReport.objects.get(options__from_dry_run=row.pk)
    assert new.outcome == "replaced"
    assert ReproductionRun.objects.get().file_sha256 == row.report["sha256"]


def refusal(client: Client, row: ImportReport, summary: str = "kept") -> str:
    before = ImportReport.objects.count()
    response = client.post(f"/imports/{row.pk}/import/", {"summary": summary})
    assert response.status_code == 409
    assert ImportReport.objects.count() == before  # no report: nothing was tried
    assert not ReproductionRun.objects.exists()
    return response.content.decode()


def test_a_report_that_was_not_a_dry_run_is_refused(seeded, analyst):
    client = signed_in(analyst)
    with NO_TRIALS.open("rb") as handle:
        client.post("/imports/", {"file": handle})
    row = ImportReport.objects.get()
    ReproductionRun.objects.all().delete()  # (so the helper can check nothing is written)

    page = refusal(client, row)

    assert "was not a dry run" in page and 'role="alert"' in page


def test_a_dry_run_imported_once_is_refused_the_second_time(seeded, analyst):
    client = signed_in(analyst)
    row = dry_run(client)
    client.post(f"/imports/{row.pk}/import/", {"summary": ""})
    assert ImportReport.objects.count() == 2
    revisions = Revision.objects.count()

    response = client.post(f"/imports/{row.pk}/import/", {"summary": ""})

    assert response.status_code == 409
    assert "already imported" in response.content.decode()
    assert ImportReport.objects.count() == 2 and Revision.objects.count() == revisions


def test_a_dry_run_whose_file_is_gone_is_refused(seeded, analyst):
    client = signed_in(analyst)
    row = dry_run(client)
    Path(row.stored_file).unlink()

    page = refusal(client, row, summary="my summary")

    assert "no longer stored" in page and "upload it again" in page
    assert "Import it now</button>" not in client.get(f"/imports/{row.pk}/").content.decode()


def test_a_changed_file_is_refused_and_the_summary_kept(seeded, analyst):
    client = signed_in(analyst)
    row = dry_run(client)
    text = VALID_SMALL.read_text(encoding="utf-8").replace('"notes": "', '"notes": "edited ', 1)
    assert text != VALID_SMALL.read_text(encoding="utf-8")
    Path(row.stored_file).write_text(text, encoding="utf-8")

    page = refusal(client, row, summary="my summary")

    assert "no longer matches" in page and 'value="my summary"' in page
    row.refresh_from_db()
    assert row.stored_file and "imported_as" not in row.options  # left as it was


def test_a_refused_dry_run_keeps_no_file_and_offers_nothing(seeded, analyst, spool):
    client = signed_in(analyst)
    row = dry_run(client, FIXTURES / "invalid" / "sample-counter-mismatch.json")
    assert row.outcome == "refused" and row.stored_file == ""
    assert not spool.exists() or not list(spool.iterdir())
    assert "Import it now" not in client.get(f"/imports/{row.pk}/").content.decode()
    assert "would not import" in refusal(client, row)


def test_an_import_refused_by_the_knowledge_base_leaves_the_dry_run_usable(seeded, analyst):
    client = signed_in(analyst)
    row = dry_run(client)
    other = FIXTURES / "db" / "replacement.json"  # the same run_id, other content
    ResultsImporter(user=analyst).import_path(other)

    response = client.post(f"/imports/{row.pk}/import/", {"summary": ""})

    new = ImportReport.objects.get(options__from_dry_run=row.pk)
    assert response["Location"] == f"/imports/{new.pk}/"
    assert new.outcome == "refused"
    row.refresh_from_db()
    assert Path(row.stored_file).is_file() and "imported_as" not in row.options


def test_only_analysts_import(seeded, analyst, viewer):
    row = dry_run(signed_in(analyst))
    client = signed_in(viewer)
    assert "Import it now" not in client.get(f"/imports/{row.pk}/").content.decode()
    assert client.post(f"/imports/{row.pk}/import/", {"summary": ""}).status_code == 403
    assert Client().post(f"/imports/{row.pk}/import/").status_code == 302  # to sign in
    assert ImportReport.objects.count() == 1


def test_a_large_file_is_queued_as_its_upload_would_be(seeded, analyst, settings, spool):
    client = signed_in(analyst)
    row = dry_run(client)
    settings.IMPORT_BACKGROUND_BYTES = 100

    client.post(f"/imports/{row.pk}/import/", {"summary": ""})

    new = ImportReport.objects.get(options__from_dry_run=row.pk)
    assert new.outcome == "queued" and not new.dry_run
    assert Path(new.stored_file).read_bytes() == VALID_SMALL.read_bytes()
    row.refresh_from_db()
    assert row.options["imported_as"] == new.pk and not Path(row.stored_file or "x").exists()


@pytest.mark.django_db(transaction=True)
def test_a_background_dry_run_keeps_its_file_for_import_now(seeded, analyst, spool):
    with VALID_SMALL.open("rb") as handle:
        queued = jobs.import_enqueue(user=analyst, upload=handle, filename="v.json", dry_run=True)
    jobs.run_import_job.call(queued.id)
    row = ImportReport.objects.get(pk=queued.id)
    assert row.outcome == "would_import" and Path(row.stored_file).is_file()

    report = jobs.import_from_dry_run(report_id=row.pk, user=analyst, summary="")

    assert report.outcome == "imported"


# --- the links of a report ----------------------------------------------------------------


def test_a_report_links_the_case_claims_run_and_revision(seeded, analyst):
    client = signed_in(analyst)
    ResultsImporter(user=analyst).import_path(VALID_SMALL)  # an earlier run id: section 1
    row = dry_run(client, NO_TRIALS)
    client.post(f"/imports/{row.pk}/import/", {"summary": ""})
    new = ImportReport.objects.get(options__from_dry_run=row.pk)

    page = client.get(f"/imports/{new.pk}/").content.decode()

    assert 'href="/cases/CP22-003/"' in page
    assert 'href="/cases/CP22-003/#CLM-CP22-003-B"' in page
    assert f'href="/cases/CP22-003/#run-2">{LATER_RUN}</a>' in page
    assert f'href="/cases/CP22-003/revisions/{new.revision_number}/"' in page
    # the anchor is the run's section on the record page
    record = client.get("/cases/CP22-003/").content.decode()
    section = r'<article class="run" id="run-2"[^>]*>\s*<h3[^>]*>Run <span class="key">'
    assert re.search(section + LATER_RUN, record)
    # a dry run: the case and claims link, the run (not there yet) does not
    dry = client.get(f"/imports/{row.pk}/").content.decode()
    assert 'href="/cases/CP22-003/#CLM-CP22-003-B"' in dry and "#run-" not in dry


# --- the claim cards --------------------------------------------------------------------


def claim_card(html: str, claim_id: str) -> str:
    start = html.index(f'<article class="claim" id="{claim_id}"')
    return html[start : html.index("</article>", start)]


def test_each_claim_card_lists_the_runs_that_bear_on_it(seeded, analyst, viewer):
    importer = ResultsImporter(user=analyst)
    importer.import_path(VALID_SMALL)
    importer.import_path(NO_TRIALS)
    html = signed_in(viewer).get("/cases/CP22-003/").content.decode()

    card = claim_card(html, "CLM-CP22-003-B")
    assert '<a class="key" href="#run-1">pd-abort-h200x2-20261021-0007</a>' in card
    assert '<a class="key" href="#run-2">pd-abort-h200x2-20261022-0001</a>' in card
    assert "Reproduction runs" not in claim_card(html, "CLM-CP22-003-A")


def test_claim_card_runs_cost_no_query(seeded, analyst, viewer):
    client = signed_in(viewer)
    ResultsImporter(user=analyst).import_path(VALID_SMALL)
    with CaptureQueriesContext(connection) as one:
        client.get("/cases/CP22-003/")
    ResultsImporter(user=analyst).import_path(NO_TRIALS)
    with CaptureQueriesContext(connection) as two:
        html = client.get("/cases/CP22-003/").content.decode()
    assert claim_card(html, "CLM-CP22-003-B").count('class="key" href="#run-') == 2
    assert len(two) == len(one)


def test_prune_imports_deletes_only_old_dry_run_files_never_imported(seeded, analyst, spool):
    import datetime as dt
    import io

    from django.core.management import call_command
    from django.utils import timezone

    client = signed_in(analyst)
    old, recent, imported = dry_run(client), dry_run(client), dry_run(client)
    client.post(f"/imports/{imported.pk}/import/", {"summary": "Imported"})
    month_ago = timezone.now() - dt.timedelta(days=30)
    ImportReport.objects.filter(pk__in=[old.pk, imported.pk]).update(created_at=month_ago)
    kept = Path(recent.stored_file)

    out = io.StringIO()
    call_command("prune_imports", "--days", "7", stdout=out)

    assert f"deleted the files of 1 dry run(s): {old.pk}" in out.getvalue()
    assert not Path(old.stored_file).exists() and kept.is_file()
    old.refresh_from_db()
    assert old.stored_file == ""
    response = client.post(f"/imports/{old.pk}/import/", {"summary": "Too late"})
    assert response.status_code == 409 and "no longer stored" in response.content.decode()
    assert sorted(p.name for p in spool.iterdir()) == [kept.name]
