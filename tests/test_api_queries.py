"""Query counts: a document GET and a list page cost a fixed number of queries, whatever the
number of cases on the page, their claims, evidence links and revisions."""

from __future__ import annotations

import copy

import pytest
from rest_framework.test import APIClient

from claimsdb.services import case_create, case_update
from claimsdb.services.releases import release_publish

from .support import case_doc, get_queries, numbered_claim, token_client

pytestmark = pytest.mark.django_db

API = "/api/v1"


@pytest.fixture
def seeded(module_seed, db):
    """Overrides conftest's: the module's one seed, not loaded again for every test."""
    return copy.deepcopy(module_seed)


@pytest.fixture
def client(seeded, viewer) -> APIClient:
    return token_client(viewer)


def grow_seed_case(seed: dict, user, *, claims: int, links: int, edits: int) -> None:
    """CP22-003 with many more claims, links and revisions."""
    document = case_doc(seed, "CP22-003")
    document["claims"] += [numbered_claim("CP22-003", n, links) for n in range(claims)]
    case_update(user=user, key="CP22-003", document=document, summary="Many claims")
    for n in range(edits):
        document["summary"] = f"Edit {n}"
        case_update(user=user, key="CP22-003", document=document, summary=f"Edit {n}")


def add_cases(seed: dict, user, count: int, *, claims: int, links: int) -> None:
    """``count`` ready cases (``user``: a reviewer, who alone sets ready)."""
    for n in range(count):
        key = f"CP30-{n:03d}"
        document = case_doc(seed, "CP22-003")
        document.update(
            key=key,
            claims=[numbered_claim(key, i, links) for i in range(claims)],
            assessments=[],
            relations=[],
            tags=["bulk", "kv-cache", f"bulk-{n}"],
        )
        for entry in document["affected"]:  # the copied entries rest on its own claims
            entry["claims"] = [document["claims"][0]["id"]]
        case_create(user=user, document=document, summary="Bulk")


def test_case_document_get_is_flat(client, seeded, analyst):
    url = f"{API}/cases/CP22-003/"
    small = get_queries(client, url)
    grow_seed_case(seeded, analyst, claims=40, links=3, edits=10)
    large = get_queries(client, url)
    assert large == small
    assert small <= 20


def test_case_list_page_is_flat(client, seeded, analyst, reviewer):
    url = f"{API}/cases/?page_size=50"
    small = get_queries(client, url)
    grow_seed_case(seeded, analyst, claims=20, links=3, edits=5)
    add_cases(seeded, reviewer, 12, claims=5, links=2)
    large = get_queries(client, url)
    assert large == small
    assert small <= 20


@pytest.mark.parametrize(
    "query", ["status=ready", "tag=kv-cache", "q=claim", "evidence_grade=B", "related_to=CP22-002"]
)
def test_filtered_case_list_is_flat(client, seeded, analyst, reviewer, query):
    url = f"{API}/cases/?page_size=50&{query}"
    small = get_queries(client, url)
    add_cases(seeded, reviewer, 6, claims=4, links=2)
    assert get_queries(client, url) == small


@pytest.mark.parametrize(
    "url",
    [
        f"{API}/revisions/?page_size=50",
        f"{API}/cases/CP22-003/revisions/",
        f"{API}/cases/CP22-003/claims/",
        f"{API}/claims/CLM-CP22-003-A/",
        f"{API}/sources/?page_size=50",
    ],
)
def test_other_reads_are_flat(client, seeded, analyst, url):
    small = get_queries(client, url)
    grow_seed_case(seeded, analyst, claims=10, links=2, edits=8)
    assert get_queries(client, url) == small


def test_query_counts_for_the_record(client, seeded, analyst, reviewer, capsys):
    """Report the fixed counts (shown with pytest -s)."""
    grow_seed_case(seeded, analyst, claims=30, links=3, edits=5)
    add_cases(seeded, reviewer, 10, claims=3, links=2)
    counts = {
        "case document": get_queries(client, f"{API}/cases/CP22-003/"),
        "case list page": get_queries(client, f"{API}/cases/?page_size=50"),
        "revision log page": get_queries(client, f"{API}/revisions/?page_size=50"),
    }
    with capsys.disabled():
        print(f"\nAPI query counts: {counts}")
    assert all(count <= 20 for count in counts.values())


# --- the released record, read without credentials ----------------------------------------

PUBLIC_URLS = [
    f"{API}/cases/?page_size=50",
    f"{API}/cases/?page_size=50&tag=kv-cache&q=claim&evidence_grade=B&ordering=-title",
    f"{API}/cases/CP22-003/",
    f"{API}/cases/CP22-003/claims/",
    f"{API}/claims/CLM-CP22-003-A/",
    f"{API}/cases/CP22-003/revisions/",
    f"{API}/sources/?page_size=50",
    f"{API}/revisions/?page_size=50",
]


@pytest.mark.parametrize("url", PUBLIC_URLS)
def test_anonymous_reads_are_flat(seeded, analyst, reviewer, url):
    """Lists and documents of the released record cost a fixed number of queries, however
    many records, claims, links, revisions and releases there are."""
    anonymous = APIClient()
    release_publish(user=reviewer, notes="Release 1")
    small = get_queries(anonymous, url)
    grow_seed_case(seeded, analyst, claims=20, links=3, edits=5)
    add_cases(seeded, reviewer, 8, claims=4, links=2)  # ready: in release 2
    release_publish(user=reviewer, notes="Release 2")
    large = get_queries(anonymous, url)
    assert large == small
    assert small <= 8


# --- pages: every page of a list costs the same, wherever it is and however large the list --


def feed_pages(client: APIClient, url: str) -> list[str]:
    """The URLs of a feed's first page, the next, the previous, and the last (in ascending
    order, the head, where ``next`` stays)."""
    first = client.get(url).json()
    second = client.get(first["next"]).json()
    urls = [url, first["next"], second["previous"]]
    page = second
    while page["results"] and page["next"]:
        urls.append(page["next"])
        page = client.get(page["next"]).json()
    return [urls[0], urls[1], urls[2], urls[-1]]


@pytest.mark.parametrize(
    "url",
    [
        f"{API}/revisions/?page_size=3",
        f"{API}/revisions/?page_size=3&ordering=-number",
        f"{API}/revisions/?page_size=3&kind=case&since=2",
        f"{API}/cases/CP22-003/revisions/?page_size=3",
    ],
)
def test_every_page_of_the_revision_feed_costs_the_same(client, seeded, analyst, url):
    grow_seed_case(seeded, analyst, claims=2, links=1, edits=6)
    small = {get_queries(client, page) for page in feed_pages(client, url)}
    assert len(small) == 1, small
    grow_seed_case(seeded, analyst, claims=10, links=2, edits=12)
    large = {get_queries(client, page) for page in feed_pages(client, url)}
    assert large == small


def test_release_pages_cost_the_same_at_any_size(client, seeded, analyst, reviewer):
    release_publish(user=reviewer, notes="Release 1")
    urls = [
        f"{API}/releases/?page_size=1",
        f"{API}/releases/1/?page_size=3",
        f"{API}/releases/1/?page_size=3&page=2",
    ]
    small = [get_queries(client, url) for url in urls]
    add_cases(seeded, reviewer, 6, claims=2, links=1)
    release_publish(user=reviewer, notes="Release 2")
    release_publish_after_edit(seeded, analyst, reviewer)
    large = [get_queries(client, url.replace("/1/", "/3/")) for url in urls]
    assert large == small
    assert small[1] == small[2]


def release_publish_after_edit(seed: dict, user, reviewer) -> None:
    document = case_doc(seed, "CP22-003")
    document["summary"] = "Edited for release 3"
    case_update(user=user, key="CP22-003", document=document, summary="Edit")
    release_publish(user=reviewer, notes="Release 3")
