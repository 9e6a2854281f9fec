"""The upload page (/imports/), import reports, and the record page's reproduction section."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from claimsdb.importers.repro_results import ResultsImporter
from claimsdb.importers.runs import scenario_stats
from claimsdb.models import ImportReport, ReproductionRun
from claimsdb.web import repro

from .repro_examples import EXAMPLES, FIXTURES, VALID_SMALL
from .support import signed_in

pytestmark = pytest.mark.usefixtures("spool")  # dry runs keep their files


def upload(client: Client, path, **fields):
    with path.open("rb") as handle:
        return client.post("/imports/", {"file": handle, **fields})


def reproduction_section(html: str) -> str:
    start = html.index('<section id="reproduction"')
    return html[start : html.index("</section>", start)]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_the_examples_import_as_their_readme_says(example, seeded, analyst):
    client = signed_in(analyst)

    response = upload(client, example.path)

    report = ImportReport.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/imports/{report.pk}/"
    page = client.get(response["Location"]).content.decode()
    assert example.path.name in page
    if example.accepted:
        assert report.outcome == "imported"
        assert ReproductionRun.objects.filter(run_id=example.run_id).exists()
        assert f"{example.scenarios}</dd>" in page
    else:
        assert report.outcome == "refused"
        assert not ReproductionRun.objects.exists()
        assert "Refused" in page
        for code, path in example.problems:
            assert f'<code>{path}</code></td><td><code class="code">{code}</code>' in page


def test_upload_options(seeded, analyst):
    client = signed_in(analyst)
    upload(client, VALID_SMALL, dry_run="on")
    assert ImportReport.objects.get().outcome == "would_import"
    upload(client, VALID_SMALL, summary="Lab rerun")
    upload(client, FIXTURES / "db" / "replacement.json")
    assert ImportReport.objects.first().outcome == "refused"
    response = upload(client, FIXTURES / "db" / "replacement.json", replace="on")
    page = client.get(response["Location"]).content.decode()
    assert "Replaced" in page
    assert ImportReport.objects.first().outcome == "replaced"


def test_a_form_without_a_file_is_shown_again(seeded, analyst):
    response = signed_in(analyst).post("/imports/", {"summary": "x"})
    assert response.status_code == 200
    assert "This field is required." in response.content.decode()
    assert not ImportReport.objects.exists()


def test_who_sees_and_who_uploads(seeded, analyst, viewer, nobody):
    anonymous = Client().get("/imports/")
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    assert signed_in(nobody).get("/imports/").status_code == 403

    page = signed_in(viewer).get("/imports/")
    assert page.status_code == 200
    assert 'enctype="multipart/form-data"' not in page.content.decode()
    assert upload(signed_in(viewer), VALID_SMALL).status_code == 403
    assert not ImportReport.objects.exists()

    page = signed_in(analyst).get("/imports/").content.decode()
    assert 'enctype="multipart/form-data"' in page
    assert "csrfmiddlewaretoken" in page


def test_uploads_need_the_csrf_token(seeded, analyst):
    client = signed_in(analyst, enforce_csrf_checks=True)
    assert upload(client, VALID_SMALL).status_code == 403
    page = client.get("/imports/").content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    assert upload(client, VALID_SMALL, csrfmiddlewaretoken=token).status_code == 302


def test_past_imports_are_listed_with_their_reports(seeded, analyst, viewer):
    importer = ResultsImporter(user=analyst)
    for example in EXAMPLES:
        importer.import_path(example.path)
    page = signed_in(viewer).get("/imports/").content.decode()
    for report in ImportReport.objects.all():
        assert f'href="/imports/{report.pk}/"' in page
    assert page.count("refused") >= 2
    detail = signed_in(viewer).get(f"/imports/{ImportReport.objects.last().pk}/")
    assert detail.status_code == 200
    assert signed_in(viewer).get("/imports/999999/").status_code == 404


def test_no_inline_script_or_style(seeded, analyst):
    client = signed_in(analyst)
    upload(client, EXAMPLES[2].path)
    for url in ("/imports/", f"/imports/{ImportReport.objects.get().pk}/"):
        html = client.get(url).content.decode()
        assert "<script" not in html and "style=" not in html and "<style" not in html


# --- the record page ----------------------------------------------------------------------


def test_record_page_shows_each_run_with_table_and_chart(seeded, analyst, viewer):
    importer = ResultsImporter(user=analyst)
    importer.import_path(VALID_SMALL)
    importer.import_path(FIXTURES / "valid" / "valid-no-trials.json")

    html = signed_in(viewer).get("/cases/CP22-003/").content.decode()

    section = reproduction_section(html)
    assert "Reproduction results" in section
    assert section.count('<article class="run"') == 2
    for text in (
        "pd-abort-race 0.3.2",  # harness name and version
        "9f1c2ab0d4e5",  # harness commit
        "NVIDIA H200, 141 GiB (prefill)",
        "sglang 0.5.4",
        "2026-10-21 09:14:03 UTC",
        "2026-10-21 09:52:40 UTC",
        "lab observations",
        "2.50 %",  # 1 of 40
        "0.44–12.88 %",  # its 95 % Wilson interval
        "none stored (counters only)",
        "/api/v1/runs/pd-abort-h200x2-20261021-0007/trials.csv",
    ):
        assert text in section, text
    assert section.count("<svg") == 2
    assert "style=" not in section and "<script" not in section
    # grouped by backend: the no-trials run has three backends
    assert section.count('<tr class="group">') == 1 + 3


def test_record_page_without_runs_has_no_section(seeded, viewer):
    html = signed_in(viewer).get("/cases/CP22-003/").content.decode()
    assert 'id="reproduction"' not in html


def test_record_page_queries_do_not_grow_with_runs(seeded, analyst, viewer, tmp_path):
    client = signed_in(viewer)
    ResultsImporter(user=analyst).import_path(VALID_SMALL)
    with CaptureQueriesContext(connection) as one:
        client.get("/cases/CP22-003/")
    ResultsImporter(user=analyst).import_path(FIXTURES / "valid" / "valid-no-trials.json")
    ResultsImporter(user=analyst).import_path(FIXTURES / "db" / "reimport.json")
    with CaptureQueriesContext(connection) as three:
        client.get("/cases/CP22-003/")
    assert len(three) == len(one)


def test_the_harness_text_is_escaped(seeded, analyst, viewer, tmp_path):
    text = VALID_SMALL.read_text(encoding="utf-8").replace(
        '"name": "pd-abort-race"', '"name": "<img src=x onerror=alert(1)>"'
    )
    hostile = tmp_path / "hostile.json"
    hostile.write_text(text, encoding="utf-8")
    assert ResultsImporter(user=analyst).import_path(hostile).outcome == "imported"
    section = reproduction_section(signed_in(viewer).get("/cases/CP22-003/").content.decode())
    assert "<img" not in section
    assert "&lt;img src=x onerror=alert(1)&gt;" in section


def test_the_chart_escapes_every_text():
    summary = {
        "run_id": "r<1>",
        "scenarios": [
            {
                "id": "<script>",
                "backend": "other:<b>",
                "mitigations": ["abort_ack"],
                "trials": 10,
                "checksum_mismatches": 1,
            },
            {"id": "a&b", "backend": "mooncake", "mitigations": [], "trials": 0},
        ],
    }
    section = repro.run_section(summary, None, 0)
    svg = str(section.chart)
    assert "<script>" not in svg and "<b>" not in svg
    assert "&lt;script&gt;" in svg and "other:&lt;b&gt;" in svg and "a&amp;b" in svg
    assert "style=" not in svg
    assert "no rate" in svg  # the scenario without trials


def test_summaries_of_any_shape_do_not_break_the_page(db):
    """Documents loaded from anywhere may carry odd run summaries."""
    for summary in ({}, {"scenarios": "many"}, {"scenarios": [1, None, {"trials": -1}]}):
        section = repro.run_section(summary, None, 0)
        assert section.run_id == ""
    assert repro.reproduction_sections([None, "x", {"run_id": "r"}])[0].run_id == "r"
    stats = scenario_stats({"scenarios": [{"id": "s", "trials": 5, "checksum_mismatches": 9}]})
    assert stats[0].stale_read is None  # more mismatches than trials: no rate


def test_axis_maximum():
    assert repro.axis_maximum([]) == 0.005
    assert repro.axis_maximum([0.0876]) == 0.1
    assert repro.axis_maximum([0.1288]) == 0.2
    assert repro.axis_maximum([0.97]) == 1.0
