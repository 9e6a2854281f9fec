"""Every list of the site comes in pages (docs/pagination.md): a stable order, no record
twice or missing across pages, the count shown, and links that keep the filters."""

from __future__ import annotations

import html as html_lib
import re

import pytest
from django.test import Client

from claimsdb.importers.repro_results import ResultsImporter
from claimsdb.models import ImportReport, Revision
from claimsdb.records import record_document
from claimsdb.services import record_create, record_update
from claimsdb.services.releases import release_publish
from claimsdb.web import pagination

from .repro_examples import VALID_SMALL
from .support import make_case, signed_in

pytestmark = pytest.mark.django_db

PAGE_SIZE = 2
CASE_KEYS = ["CP22-002", "CP22-003", "PG-1", "PG-2", "PG-3"]
NEXT = re.compile(r'<a href="([^"]*)" rel="next">')
COUNT = re.compile(r'<p class="count">([^<]*)</p>')


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(pagination, "PAGE_SIZE", PAGE_SIZE)


def walk(client: Client, url: str, item: str) -> tuple[list[list[str]], list[str]]:
    """Follow the ``next`` links from ``url``: the items (``item``: a regex with one group)
    of each page, and the count line of each."""
    pages, counts = [], []
    path = url.split("?")[0]
    while url:
        response = client.get(url)
        assert response.status_code == 200, url
        body = response.content.decode()
        pages.append(re.findall(item, body))
        counts.append(COUNT.search(body).group(1))
        found = NEXT.search(body)
        href = html_lib.unescape(found.group(1)) if found else ""
        url = path + href if href.startswith("?") else href
        assert len(pages) < 20, "the next links never end"
    return pages, counts


def assert_paged(pages: list[list[str]], expected: list[str]) -> None:
    """Pages of PAGE_SIZE (the last may be shorter), together every item once, in order."""
    assert all(len(page) == PAGE_SIZE for page in pages[:-1]), pages
    assert 1 <= len(pages[-1]) <= PAGE_SIZE, pages
    flat = [item for page in pages for item in page]
    assert flat == expected


@pytest.fixture
def more_cases(seeded, reviewer):
    for key in CASE_KEYS[2:]:
        make_case(reviewer, key, claims=1, links=1)


def rule_document(key: str, case: str) -> dict:
    return {
        "format": "claimsdb.rule/1",
        "key": key,
        "kind": "non_attribution",
        "status": "active",
        "figure": "FIG-CP22-002-RESPONSES",
        "case": case,
        "reason": "Paging test.",
    }


@pytest.fixture
def more_records(more_cases, reviewer):
    """Three rules and three methods, so that each list has more than a page."""
    for n in (1, 2):
        record_create(
            kind="rule",
            document=rule_document(f"RULE-PG-{n}", f"PG-{n}"),
            user=reviewer,
            summary="Paging",
        )
        method = record_document("method", "diggingbeagle.assessment/1")
        method["key"] = f"paging.method{n}/1"
        record_create(kind="method", document=method, user=reviewer, summary="Paging")


CASE_ITEM = r'<h2><a href="/cases/([^/"]+)/">'


def test_case_list_pages_with_count_and_kept_filters(more_cases, viewer):
    client = signed_in(viewer)
    pages, counts = walk(client, "/cases/", CASE_ITEM)
    assert_paged(pages, CASE_KEYS)
    assert counts == ["5 cases · page 1 of 3", "5 cases · page 2 of 3", "5 cases · page 3 of 3"]
    # a filter stays in every link; CP22-002 has no rdma tag
    body = client.get("/cases/?tag=rdma").content.decode()
    assert 'href="?tag=rdma&amp;page=2" rel="next"' in body
    assert 'href="?tag=rdma&amp;page=2" rel="last"' in body
    pages, counts = walk(client, "/cases/?tag=rdma", CASE_ITEM)
    assert_paged(pages, CASE_KEYS[1:])
    assert counts[0] == "4 cases · page 1 of 2"
    # page 2's first and previous links go back to page 1 with the filter
    body = client.get("/cases/?tag=rdma&page=2").content.decode()
    assert 'href="?tag=rdma" rel="first"' in body and 'href="?tag=rdma" rel="prev"' in body


def test_page_numbers_out_of_range_show_the_last_page_and_junk_the_first(more_cases, viewer):
    """As Django's ``Paginator.get_page``: a number past either end shows the last page,
    anything else that is not a page number the first; never a 404."""
    client = signed_in(viewer)
    for number, keys in [("99", ["PG-3"]), ("0", ["PG-3"]), ("-1", ["PG-3"])]:
        response = client.get(f"/cases/?page={number}")
        assert response.status_code == 200
        assert re.findall(CASE_ITEM, response.content.decode()) == keys, number
    for junk in ("abc", "1.5", ""):
        response = client.get(f"/cases/?page={junk}")
        assert response.status_code == 200
        assert re.findall(CASE_ITEM, response.content.decode()) == CASE_KEYS[:2], junk


def test_one_page_shows_the_count_and_no_links(seeded, viewer):
    body = signed_in(viewer).get("/cases/").content.decode()
    assert COUNT.search(body).group(1) == "2 cases"
    assert 'rel="next"' not in body and 'rel="prev"' not in body


def test_public_case_list_pages_released_cases(more_cases, reviewer, client):
    release_publish(user=reviewer, notes="Paging")
    make_case(reviewer, "PG-4", claims=1, links=1)  # not released
    pages, counts = walk(client, "/cases/", CASE_ITEM)
    assert_paged(pages, CASE_KEYS)
    assert counts[0] == "5 cases · page 1 of 3"
    pages, _ = walk(client, "/cases/?tag=rdma&a.setting=research_demonstration", CASE_ITEM)
    flat = [key for page in pages for key in page]
    assert "CP22-002" not in flat and "PG-4" not in flat
    body = client.get("/cases/?tag=rdma").content.decode()
    assert 'href="?tag=rdma&amp;page=2" rel="next"' in body


SOURCE_ITEM = r'<a href="/sources/([^/"]+)/"><cite>'


def test_source_list_pages_working_and_released(seeded, reviewer, viewer, client):
    keys = sorted(s["key"] for s in seeded["sources"])
    pages, counts = walk(signed_in(viewer), "/sources/", SOURCE_ITEM)
    assert_paged(pages, keys)
    assert counts[0] == f"{len(keys)} sources · page 1 of {(len(keys) + 1) // 2}"
    issues = sorted(s["key"] for s in seeded["sources"] if s["kind"] == "upstream_issue")
    pages, _ = walk(signed_in(viewer), "/sources/?kind=upstream_issue", SOURCE_ITEM)
    assert_paged(pages, issues)
    release_publish(user=reviewer, notes="Paging")
    pages, _ = walk(client, "/sources/", SOURCE_ITEM)
    assert_paged(pages, keys)
    pages, counts = walk(client, "/sources/?kind=upstream_issue", SOURCE_ITEM)
    assert_paged(pages, issues)
    assert counts[0].startswith(f"{len(issues)} sources · page 1 of")


@pytest.mark.parametrize(
    "url, item, keys",
    [
        (
            "/rules/",
            r'<a href="/rules/([^/"]+)/"><span class="key">',
            ["RULE-CP22-002-RESPONSES-NOT-CP22-003", "RULE-PG-1", "RULE-PG-2"],
        ),
        (
            "/methods/",
            r'<a href="/methods/([^"]+)/"><span class="key">',
            ["diggingbeagle.assessment/1", "paging.method1/1", "paging.method2/1"],
        ),
    ],
)
def test_rule_and_method_lists_page(more_records, reviewer, viewer, client, url, item, keys):
    pages, counts = walk(signed_in(viewer), url, item)
    assert_paged(pages, keys)
    assert counts[0].endswith(" · page 1 of 2") and counts[0].startswith("3 ")
    release_publish(user=reviewer, notes="Paging")
    pages, _ = walk(client, url, item)
    assert_paged(pages, keys)


def test_history_pages_newest_first_with_diffs_across_pages(seeded, analyst, viewer):
    for n in range(4):
        document = record_document("case", "CP22-003")
        document["summary"] = f"Edit {n}"
        record_update(kind="case", key="CP22-003", document=document, user=analyst, summary="e")
    numbers = list(
        Revision.objects.filter(record_kind="case", record_key="CP22-003")
        .order_by("-number")
        .values_list("number", flat=True)
    )
    client = signed_in(viewer)
    pages, counts = walk(
        client, "/cases/CP22-003/history/", r'href="/cases/CP22-003/revisions/(\d+)/"'
    )
    assert_paged(pages, [str(n) for n in numbers])
    assert counts[0] == f"{len(numbers)} revisions · page 1 of 3"
    # the last entry of page 1 compares with the first of page 2
    body = client.get("/cases/CP22-003/history/").content.decode()
    assert f'href="/cases/CP22-003/diff/{numbers[2]}/{numbers[1]}/"' in body
    # the compare form starts on the page's newest two and takes any numbers
    assert f'name="a" min="1" required value="{numbers[1]}"' in body
    assert f'name="b" min="1" required value="{numbers[0]}"' in body


def test_public_history_pages(seeded, analyst, reviewer, client):
    for n in range(3):
        document = record_document("case", "CP22-003")
        document["summary"] = f"Released edit {n}"
        record_update(kind="case", key="CP22-003", document=document, user=analyst, summary="e")
        release_publish(user=reviewer, notes=f"Release {n}")
    pages, counts = walk(client, "/cases/CP22-003/history/", r"<strong>Revision (\d+)</strong>")
    released = [
        n
        for n in Revision.objects.filter(record_kind="case", record_key="CP22-003", material=True)
        .order_by("-number")
        .values_list("number", flat=True)
    ]
    assert_paged(pages, [str(n) for n in released])
    assert counts[0].startswith(f"{len(released)} revisions · page 1 of")


def test_release_list_and_a_release_entries_page(seeded, analyst, reviewer, client):
    for n in range(3):
        if n:
            document = record_document("case", "CP22-003")
            document["summary"] = f"For release {n + 1}"
            record_update(kind="case", key="CP22-003", document=document, user=analyst, summary="e")
        release_publish(user=reviewer, notes=f"Release {n + 1}")
    pages, counts = walk(client, "/releases/", r'<a href="/releases/(\d+)/">Release')
    assert_paged(pages, ["3", "2", "1"])
    assert counts[0] == "3 releases · page 1 of 2"
    # release 1: 18 new records, by kind and key, two a page
    entry = (
        r'<th scope="row"><a href="/(?:cases|sources|rules|methods|components)/'
        r'([^"]+)/revisions/\d+/"'
    )
    pages, counts = walk(client, "/releases/1/", entry)
    kinds = {
        "cases": "case",
        "sources": "source",
        "rules": "rule",
        "methods": "method",
        "components": "component",
    }
    expected = sorted(
        (kind, document["key"]) for name, kind in kinds.items() for document in seeded[name]
    )
    assert_paged(pages, [key for _, key in expected])
    assert counts[0] == "18 changed records · page 1 of 9"
    # release 3: one changed record; 17 unchanged ones in their own pages (?unchanged_page=)
    body = client.get("/releases/3/").content.decode()
    assert "1 changed record" in body and "17 unchanged records · page 1 of 9" in body
    assert "<details>" in body
    body = client.get("/releases/3/?unchanged_page=9").content.decode()
    assert "<details open>" in body and "17 unchanged records · page 9 of 9" in body
    assert 'href="?unchanged_page=8" rel="prev"' in body


def test_import_list_pages_newest_first(seeded, analyst, viewer):
    for _ in range(3):
        with VALID_SMALL.open("rb") as handle:
            ResultsImporter(user=analyst, dry_run=True).import_file(handle, filename="x.json")
    ids = [
        str(pk)
        for pk in ImportReport.objects.order_by("-created_at", "-id").values_list("pk", flat=True)
    ]
    pages, counts = walk(signed_in(viewer), "/imports/", r'<td[^>]*><a href="/imports/(\d+)/">')
    assert_paged(pages, ids)
    assert counts[0] == "3 imports · page 1 of 2"
