"""The import workflow in a browser: a dry run, "Import it now", the report's links, the
runs on the claim cards, and the import pages and record page at desktop and phone widths."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from claimsdb.importers.repro_results import ResultsImporter
from claimsdb.models import ImportReport, ReproductionRun
from tests.repro_examples import VALID_SMALL
from tests.support import artifact, sign_in

pytestmark = pytest.mark.usefixtures("spool")

RUN = "pd-abort-h200x2-20261021-0007"


def fits(page, width: int) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= width, page.url


def test_dry_run_then_import_it_now(seeded_site, new_page, spool):
    page = new_page(width=1280)
    sign_in(page, seeded_site, "analyst")
    page.goto(f"{seeded_site}/imports/")
    page.set_input_files("#upload input[type=file]", str(VALID_SMALL))
    page.check("#upload input[name=dry_run]")
    page.fill("#upload input[name=summary]", "Lab rerun on H200")
    page.click("#upload button[type=submit]")

    page.wait_for_url(f"{seeded_site}/imports/*/")
    assert "Dry run: would import" in page.inner_text("h2")
    assert not ReproductionRun.objects.exists()
    summary = page.locator("#import-now input[name=summary]")
    assert summary.input_value() == "Lab rerun on H200"
    fits(page, 1280)
    page.screenshot(path=artifact("imports-dry-run.png"), full_page=True)
    dry_url = page.url

    summary.fill("Imported after the dry run")
    page.click("#import-now button[type=submit]")

    page.wait_for_url(lambda url: url != dry_url)
    new = ImportReport.objects.get(dry_run=False)
    assert page.url == f"{seeded_site}/imports/{new.pk}/"
    assert page.inner_text(".import-report h2") == "Imported"
    assert ReproductionRun.objects.get().run_id == RUN
    report = page.locator(".import-report")
    assert report.locator('a[href="/cases/CP22-003/"]').count() == 1
    assert report.locator('a[href="/cases/CP22-003/#CLM-CP22-003-B"]').inner_text() == (
        "CLM-CP22-003-B"
    )
    revision = report.locator(f'a[href="/cases/CP22-003/revisions/{new.revision_number}/"]')
    assert revision.count() == 1
    assert page.locator(".import-link a").inner_text() == f"dry run {new.options['from_dry_run']}"
    fits(page, 1280)
    page.screenshot(path=artifact("imports-report.png"), full_page=True)

    # the run link lands on the run's section of the record page
    report.locator('a[href="/cases/CP22-003/#run-1"]').click()
    page.wait_for_url(f"{seeded_site}/cases/CP22-003/#run-1")
    assert RUN in page.inner_text("#run-1 h3")
    # the claim card lists the run, linked to that section
    card_link = page.locator("#CLM-CP22-003-B .claim-runs a")
    assert card_link.inner_text() == RUN and card_link.get_attribute("href") == "#run-1"
    assert page.locator("#CLM-CP22-003-A .claim-runs").count() == 0

    # the dry run was spent: its report links the import and offers no button any more
    page.goto(dry_url)
    assert page.locator("#import-now").count() == 0
    assert page.locator(f'.import-link a[href="/imports/{new.pk}/"]').count() == 1
    assert page.csp_errors == []


def test_import_pages_and_record_page_fit_desktop_and_phone(seeded_site, new_page, spool):
    analyst = User.objects.get(username="analyst")
    long_name = spool.parent / ("results-" + "h200x2-pd-abort-race-" * 8 + ".json")
    long_name.write_bytes(VALID_SMALL.read_bytes())
    report = ResultsImporter(user=analyst).import_path(long_name)
    assert report.outcome == "imported"

    for width in (1280, 390):
        page = new_page(width=width, height=844 if width == 390 else 900)
        sign_in(page, seeded_site, "analyst")
        for url in ("/imports/", f"/imports/{report.id}/", "/cases/CP22-003/"):
            page.goto(seeded_site + url)
            fits(page, width)
        if width == 390:
            page.goto(f"{seeded_site}/imports/")
            # each past import is a card in the column, not a row to scroll to
            table = page.locator("table.imports").bounding_box()
            assert table["x"] + table["width"] <= width
            page.goto(f"{seeded_site}/imports/{report.id}/")
            hash_box = page.locator(".import-report code.hash").first.bounding_box()
            assert hash_box["x"] + hash_box["width"] <= width  # the hash wraps
            page.screenshot(path=artifact("imports-phone.png"), full_page=True)

            page.goto(f"{seeded_site}/cases/CP22-003/")
            # the scenario table scrolls sideways in its own box, the chart fits the column
            wrap = page.locator("#run-1 .table-wrap")
            assert wrap.evaluate("e => getComputedStyle(e).overflowX") == "auto"
            assert wrap.evaluate("e => e.getBoundingClientRect().right") <= width
            # the chart keeps a readable size and scrolls sideways in its own box too
            scroll = page.locator("#run-1 figure.chart .chart-scroll")
            assert scroll.evaluate("e => getComputedStyle(e).overflowX") == "auto"
            assert scroll.evaluate("e => e.getBoundingClientRect().right") <= width
            chart = page.locator("#run-1 figure.chart svg").bounding_box()
            assert chart["width"] >= 560  # 680 units: its 12-unit text stays 10 px or more
            assert page.locator("#CLM-CP22-003-B .claim-runs a").inner_text() == RUN
            page.screenshot(path=artifact("record-runs-phone.png"), full_page=True)
        assert page.csp_errors == []
