"""The record page and the lists run a fixed number of queries, however big the case."""

from __future__ import annotations

from claimsdb import public
from claimsdb.models import Revision
from claimsdb.records import canonical, record_document
from claimsdb.services import record_update

from .support import get_queries, make_case, publish, signed_in


def numbers(key: str) -> list[int]:
    return sorted(Revision.objects.filter(record_key=key).values_list("number", flat=True))


def test_record_page_queries_do_not_grow_with_claims_and_links(seeded, reviewer, viewer):
    make_case(reviewer, "SMALL-1", claims=2, links=1)
    make_case(reviewer, "BIG-1", claims=40, links=3)
    client = signed_in(viewer)
    client.get("/")  # the session is loaded once
    for page in ("/cases/{}/", "/cases/{}/history/", "/cases/{}/record.json"):
        small = get_queries(client, page.format("SMALL-1"))
        big = get_queries(client, page.format("BIG-1"))
        assert small == big, (page, small, big)
        print(f"{page.format('…')}: {small} queries for 2 claims, {big} for 40 claims × 3 links")
    small_numbers = numbers("SMALL-1")
    big_numbers = numbers("BIG-1")
    assert get_queries(client, f"/cases/SMALL-1/revisions/{small_numbers[0]}/") == get_queries(
        client, f"/cases/BIG-1/revisions/{big_numbers[0]}/"
    )
    assert get_queries(
        client, f"/cases/SMALL-1/diff/{small_numbers[0]}/{small_numbers[1]}/"
    ) == get_queries(client, f"/cases/BIG-1/diff/{big_numbers[0]}/{big_numbers[1]}/")
    # the revert preview reads the record now and the revision: as many queries either way
    reviewing = signed_in(reviewer)
    reviewing.get("/")
    small = get_queries(reviewing, f"/cases/SMALL-1/revisions/{small_numbers[0]}/revert/")
    big = get_queries(reviewing, f"/cases/BIG-1/revisions/{big_numbers[0]}/revert/")
    assert small == big, ("revert preview", small, big)
    # and the number is small
    assert get_queries(client, "/cases/BIG-1/") <= 30


def test_the_case_list_and_a_search_cost_what_they_read(seeded, viewer):
    """A signed-in reader's case list: the session and the user, then the methods, the tags
    in use, the count and the page's keys (sent together on PostgreSQL), then the page's
    rows, tags and current assessments (one query on PostgreSQL, three elsewhere). A
    search: the session, the user, the counts and the page."""
    from django.db import connection

    client = signed_in(viewer)
    rows = 1 if connection.vendor == "postgresql" else 3
    assert get_queries(client, "/cases/") == 2 + 4 + rows
    # past the end: the last page is read after the count
    assert get_queries(client, "/cases/?page=2") == 2 + 4 + 1 + rows
    assert get_queries(client, "/cases/?status=ready") == 2 + 4 + rows
    assert get_queries(client, "/?q=cache") == 2 + 2


def test_list_queries_do_not_grow_with_cases(seeded, reviewer, viewer):
    client = signed_in(viewer)
    client.get("/")
    pages = [
        "/cases/",
        "/cases/?status=ready&a.setting=research_demonstration",
        "/sources/",
        "/rules/",
        "/methods/",
        "/?q=cache",
    ]
    few = {page: get_queries(client, page) for page in pages}
    for n in range(6):
        make_case(reviewer, f"MANY-{n}", claims=5, links=3)
    many = {page: get_queries(client, page) for page in pages}
    assert few == many
    print(few)


def test_public_record_page_queries_do_not_grow_with_claims_and_links(seeded, reviewer, client):
    """Anonymous visitors read released snapshots: the same flat counts."""
    make_case(reviewer, "SMALL-1", claims=2, links=1)
    make_case(reviewer, "BIG-1", claims=40, links=3)
    publish(reviewer, notes="For counting")
    for page in ("/cases/{}/", "/cases/{}/history/", "/cases/{}/record.json"):
        small = get_queries(client, page.format("SMALL-1"))
        big = get_queries(client, page.format("BIG-1"))
        assert small == big, (page, small, big)
        print(f"anonymous {page.format('…')}: {small} queries for 2 claims, {big} for 40 × 3")
    small = public.released_revision("case", "SMALL-1").number
    big = public.released_revision("case", "BIG-1").number
    assert get_queries(client, f"/cases/SMALL-1/revisions/{small}/") == get_queries(
        client, f"/cases/BIG-1/revisions/{big}/"
    )
    assert get_queries(client, "/cases/BIG-1/") <= 30


def test_public_list_queries_do_not_grow_with_cases(seeded, reviewer, client):
    publish(reviewer, notes="1")
    pages = [
        "/cases/",
        "/cases/?tag=rdma&a.setting=research_demonstration",
        "/sources/",
        "/rules/",
        "/methods/",
        "/?q=cache",
        "/",
    ]
    few = {page: get_queries(client, page) for page in pages}
    for n in range(6):
        make_case(reviewer, f"MANY-{n}", claims=5, links=3)
    publish(reviewer, notes="2")
    many = {page: get_queries(client, page) for page in pages}
    assert few == many
    assert "MANY-5" in client.get("/cases/").content.decode()
    print(few)


def edit(user, key: str, text: str) -> None:
    document = record_document("case", key)
    document["summary"] = text
    record_update(kind="case", key=key, document=document, user=user, summary=text)


def dry_run_import(user) -> None:
    from claimsdb.importers.repro_results import ResultsImporter

    from .repro_examples import VALID_SMALL

    with VALID_SMALL.open("rb") as handle:
        ResultsImporter(user=user, dry_run=True).import_file(handle, filename="x.json")


def grow(user, first: int, cases: int, edits: int) -> int:
    """More cases, edits of CP22-003, dry-run imports, and a release of them all; returns
    the release's number."""
    for n in range(first, first + cases):
        make_case(user, f"PAGED-{n}", claims=3, links=2)
        dry_run_import(user)
    for n in range(edits):
        edit(user, "CP22-003", f"Edit {first}-{n}")
    edit(user, f"PAGED-{first}", "Changed for the release")
    return publish(user, notes=f"From {first}").number


def test_paged_list_queries_are_the_same_on_every_page_and_size(
    seeded, reviewer, viewer, client, monkeypatch
):
    """Every list at a page size smaller than its data: the first and a later page cost the
    same queries, and keep costing them when the knowledge base grows."""
    from claimsdb.web import pagination

    monkeypatch.setattr(pagination, "PAGE_SIZE", 2)
    publish(reviewer, notes="Seed")
    small_release = grow(reviewer, 0, cases=3, edits=3)
    viewer_client = signed_in(viewer)
    viewer_client.get("/")
    working = [
        "/cases/",
        "/cases/?page=2",
        "/cases/?tag=rdma&page=2",
        "/sources/?page=2",
        "/sources/?kind=upstream_issue&page=2",
        "/rules/",
        "/methods/",
        "/cases/CP22-003/history/",
        "/cases/CP22-003/history/?page=2",
        "/releases/",
        "/releases/1/?page=2",
        "/imports/",
        "/imports/?page=2",
    ]
    public_pages = [
        "/cases/",
        "/cases/?page=2",
        "/sources/?page=2",
        "/rules/",
        "/methods/",
        "/cases/CP22-003/history/",
        "/releases/",
    ]

    def measure() -> dict:
        counts = {url: get_queries(viewer_client, url) for url in working}
        counts.update({f"public {url}": get_queries(client, url) for url in public_pages})
        return counts

    few = measure()
    few["release"] = get_queries(client, f"/releases/{small_release}/?unchanged_page=2")
    large_release = grow(reviewer, 3, cases=6, edits=8)
    many = measure()
    many["release"] = get_queries(client, f"/releases/{large_release}/?unchanged_page=3")
    assert few == many
    # the two pages of one list cost the same
    assert few["/cases/"] == few["/cases/?page=2"]
    assert few["/cases/CP22-003/history/"] == few["/cases/CP22-003/history/?page=2"]
    print(few)


def test_the_public_case_list_reads_the_snapshots_of_its_page_alone(
    seeded, reviewer, client, monkeypatch
):
    """A signed-out page of the case list parses the released snapshots of the cases it
    shows, not of every released case (for its tags, or to filter them)."""

    from claimsdb.web import pagination

    for n in range(4):
        make_case(reviewer, f"MANY-{n}", claims=1, links=1)
    document = record_document("case", "MANY-3")
    document["tags"] = [*document["tags"], "only-on-the-last-page"]
    record_update(kind="case", key="MANY-3", document=document, user=reviewer, summary="Tag")
    publish(reviewer, notes="1")
    monkeypatch.setattr(pagination, "PAGE_SIZE", 2)
    parsed: list[str] = []

    loads = canonical.loads

    class CountingCanonical:
        @staticmethod
        def loads(text, *args, **kwargs):
            value = loads(text, *args, **kwargs)
            if isinstance(value, dict) and value.get("format") == "claimsdb.case/1":
                parsed.append(value["key"])
            return value

    monkeypatch.setattr(public, "canonical", CountingCanonical)
    page = client.get("/cases/").content.decode()
    assert sorted(parsed) == ["CP22-002", "CP22-003"]  # the first page's two, of six
    assert "only-on-the-last-page" in page  # every released tag is offered
    parsed.clear()
    page = client.get("/cases/?tag=only-on-the-last-page").content.decode()
    assert parsed == ["MANY-3"]
    assert "/cases/MANY-3/" in page and "/cases/MANY-2/" not in page
