"""The coverage matrix at phone width and in print (templates/cases/_coverage.html,
claimsdb/static/claimsdb/coverage.css): CP22-003's page and Mooncake's fit 390 px, each
tested group reads as a card, and the printed page keeps the matrix without its API link."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth.models import User

from claimsdb.importers.repro_results import ResultsImporter
from tests.support import artifact, sign_in

PHONE = 390
SAMPLE = (
    Path(__file__).resolve().parents[2] / "fixtures" / "repro" / "valid" / "backend-versions.json"
)


def scroll_width(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


def test_the_matrix_fits_a_phone_and_prints(seeded_site, new_page):
    analyst = User.objects.get(username="analyst")
    assert ResultsImporter(user=analyst).import_path(SAMPLE).outcome == "imported"
    page = new_page(width=PHONE, height=844, javascript=False)
    sign_in(page, seeded_site, "analyst")

    page.goto(f"{seeded_site}/cases/CP22-003/#coverage")
    assert page.locator("#coverage").is_visible()
    assert page.locator("#coverage .gaps li").all_inner_texts() == ["MORI: no runs"]
    assert scroll_width(page) <= PHONE
    # on a phone a tested group is a card: its cells stack, each with its label
    cell = page.locator("table.coverage-tested td.rate").first
    assert cell.evaluate("e => getComputedStyle(e).display") == "block"
    assert "Stale-read rate" in cell.evaluate("e => getComputedStyle(e, '::before').content")
    page.locator("#coverage").screenshot(path=str(artifact("coverage-390.png")))

    page.emulate_media(media="print")
    assert (
        page.locator("#coverage article.coverage-row").first.evaluate(
            "e => getComputedStyle(e).breakInside"
        )
        == "avoid"
    )
    assert not page.locator("#coverage .api-link").is_visible()
    assert page.locator("#coverage .gaps").is_visible()

    page.emulate_media(media="screen")
    page.goto(f"{seeded_site}/components/CMP-MOONCAKE/")
    assert page.locator("#runs table.coverage-tested").is_visible()
    assert scroll_width(page) <= PHONE
