"""Every list of the API comes in pages (docs/pagination.md): record lists, releases and a
release's entries by page number with ``count``; the revision feed by keyset cursor, which
a tool follows to the head and keeps polling."""

from __future__ import annotations

import base64
import copy

import pytest
from rest_framework.test import APIClient

from claimsdb.models import Revision
from claimsdb.records import record_document
from claimsdb.services import record_create, record_update

from .support import new_case, publish, token_client

pytestmark = pytest.mark.django_db

API = "/api/v1"


@pytest.fixture
def seeded(module_seed, db):
    """Overrides conftest's: the module's one seed, not loaded again for every test."""
    return copy.deepcopy(module_seed)


def follow(client: APIClient, url: str) -> list[dict]:
    """Every page from ``url`` on, following ``next`` until it is null or, for the feed,
    up to the first empty page (the head, whose ``next`` never runs out)."""
    pages: list[dict] = []
    while url:
        response = client.get(url)
        assert response.status_code == 200, response.content
        pages.append(response.json())
        url = pages[-1]["next"] if pages[-1]["results"] else None
        assert len(pages) < 50, "next never runs out"
    return pages


def keys_of(pages: list[dict], name: str = "key") -> list:
    return [item[name] for page in pages for item in page["results"]]


def add_cases(user, count: int, *, title: str = "Same title") -> list[str]:
    keys = [f"CP88-{n:03d}" for n in range(count)]
    for key in keys:
        record_create(kind="case", document=new_case(key, title=title), user=user, summary="+")
    return keys


# --- records: page numbers, count, a stable order -------------------------------------------


@pytest.mark.parametrize("kind", ["cases", "sources", "rules", "methods"])
def test_record_lists_page_with_count(seeded, viewer, kind):
    expected = sorted(document["key"] for document in seeded[kind])
    client = token_client(viewer)
    pages = follow(client, f"{API}/{kind}/?page_size=3")
    assert keys_of(pages) == expected
    assert {page["count"] for page in pages} == {len(expected)}
    assert all(len(page["results"]) == 3 for page in pages[:-1])
    assert pages[0]["previous"] is None
    if len(pages) > 1:
        assert "page=2" in pages[0]["next"] and "page_size=3" in pages[0]["next"]


def test_equal_values_keep_one_order_across_pages(seeded, analyst, viewer):
    """``ordering=title`` (or status) over many equal titles: the key breaks the ties, so
    every case appears once, whatever the page size."""
    keys = add_cases(analyst, 7)
    client = token_client(viewer)
    expected = sorted(
        [(document["title"], document["key"]) for document in seeded["cases"]]
        + [("Same title", key) for key in keys]
    )
    for size in (2, 3):
        pages = follow(client, f"{API}/cases/?ordering=title&page_size={size}")
        assert keys_of(pages) == [key for _, key in expected]
        descending = follow(client, f"{API}/cases/?ordering=-status&page_size={size}")
        found = keys_of(descending)
        assert sorted(found) == sorted(found) and len(set(found)) == len(found) == 9
    # filters stay in the links
    page = client.get(f"{API}/cases/?status=draft&ordering=title&page_size=2").json()
    assert page["count"] == 7
    assert "status=draft" in page["next"] and "ordering=title" in page["next"]


def test_public_record_lists_page_released_records(seeded, reviewer):
    publish(reviewer, notes="Seed")
    record_create(kind="case", document=new_case("CP88-999"), user=reviewer, summary="draft")
    pages = follow(APIClient(), f"{API}/sources/?page_size=4")
    assert keys_of(pages) == sorted(document["key"] for document in seeded["sources"])
    pages = follow(APIClient(), f"{API}/cases/?page_size=1")
    assert keys_of(pages) == ["CP22-002", "CP22-003"]
    assert pages[0]["count"] == 2


def test_a_page_past_the_end_is_a_404_in_the_error_shape(seeded, viewer):
    response = token_client(viewer).get(f"{API}/cases/?page=99")
    assert response.status_code == 404
    assert response.json()["errors"][0]["code"] == "request.not_found"


@pytest.mark.parametrize("page", ["", "0", "abc", "-1", "1.5"])
def test_a_page_that_is_not_a_whole_number_is_refused(seeded, viewer, page):
    for path in ("cases/", "runs/", "releases/"):
        response = token_client(viewer).get(f"{API}/{path}", {"page": page})
        assert response.status_code == 400, (path, page)
        assert [(e["code"], e["path"]) for e in response.json()["errors"]] == [
            ("request.invalid", "page")
        ]


# --- the revision feed: keyset pages --------------------------------------------------------


def all_numbers(**filters) -> list[int]:
    return list(
        Revision.objects.filter(**filters).order_by("number").values_list("number", flat=True)
    )


def edit(user, key: str, text: str) -> int:
    document = record_document("case", key)
    document["summary"] = text
    return record_update(
        kind="case", key=key, document=document, user=user, summary=text
    ).revision.number


def test_the_feed_is_followed_to_the_head_and_then_polled(seeded, viewer, analyst):
    client = token_client(viewer)
    numbers = all_numbers()
    pages = follow(client, f"{API}/revisions/?page_size=4")
    # every revision once, in order, and then the head: an empty page whose next is itself
    assert pages[-1]["results"] == []
    assert keys_of(pages, "number") == numbers
    assert all(len(page["results"]) == 4 for page in pages[:-2])
    assert {page["count"] for page in pages} == {len(numbers)}
    head = pages[-1]
    again = client.get(head["next"]).json()
    assert again["results"] == [] and again["next"] == head["next"]
    # a new revision lands: the same link now returns it, and next moves past it
    number = edit(analyst, "CP22-003", "Landed")
    landed = client.get(head["next"]).json()
    assert [item["number"] for item in landed["results"]] == [number]
    assert landed["count"] == len(numbers) + 1
    after = client.get(landed["next"]).json()
    assert after["results"] == [] and after["next"] == landed["next"]
    # and previous goes back: the page before the landed one ends just before it
    before = client.get(landed["previous"]).json()
    assert [item["number"] for item in before["results"]] == numbers[-4:]


def test_previous_links_walk_back_to_the_start(seeded, viewer):
    client = token_client(viewer)
    numbers = all_numbers()
    pages = follow(client, f"{API}/revisions/?page_size=3")
    url, seen = pages[-2]["previous"], []
    while url:
        page = client.get(url).json()
        seen = [item["number"] for item in page["results"]] + seen
        url = page["previous"]
    assert seen + keys_of(pages[-2:], "number") == numbers


def test_newest_first_ends_after_revision_one(seeded, viewer):
    client = token_client(viewer)
    numbers = all_numbers()
    pages = follow(client, f"{API}/revisions/?ordering=-number&page_size=5")
    assert keys_of(pages, "number") == numbers[::-1]
    assert pages[-1]["next"] is None and pages[-1]["results"]


def test_since_and_filters_work_with_the_cursor(seeded, viewer, analyst):
    first = edit(analyst, "CP22-003", "One")
    edit(analyst, "CP22-002", "Two")
    third = edit(analyst, "CP22-003", "Three")
    client = token_client(viewer)
    pages = follow(client, f"{API}/revisions/?since={first - 1}&page_size=1")
    assert keys_of(pages, "number") == list(range(first, third + 1))
    assert all("since=" in page["next"] for page in pages)
    pages = follow(client, f"{API}/revisions/?record=case:CP22-003&page_size=1")
    assert keys_of(pages, "number") == all_numbers(record_kind="case", record_key="CP22-003")
    assert pages[0]["count"] == len(keys_of(pages, "number"))


@pytest.mark.parametrize("since", ["", "0", "3", " 4 ", "5.0", "+6", "100000"])
def test_the_feed_count_is_the_number_of_revisions_matched(seeded, viewer, analyst, since):
    edit(analyst, "CP22-003", "One more")
    body = token_client(viewer).get(f"{API}/revisions/", {"since": since}).json()
    floor = int(float(since.strip() or 0))
    assert body["count"] == len(all_numbers(number__gt=floor))


def test_a_case_revisions_feed_pages_and_polls(seeded, viewer, analyst):
    client = token_client(viewer)
    for n in range(4):
        edit(analyst, "CP22-003", f"Edit {n}")
    numbers = all_numbers(record_kind="case", record_key="CP22-003")
    pages = follow(client, f"{API}/cases/CP22-003/revisions/?page_size=2")
    assert keys_of(pages, "number") == numbers and pages[-1]["results"] == []
    edit(analyst, "CP22-002", "Another case")
    assert client.get(pages[-1]["next"]).json()["results"] == []
    number = edit(analyst, "CP22-003", "This case")
    assert [r["number"] for r in client.get(pages[-1]["next"]).json()["results"]] == [number]


def test_the_public_feed_pages_only_released_revisions(seeded, reviewer, analyst):
    publish(reviewer, notes="Seed")
    edit(analyst, "CP22-003", "Draft")
    released = all_numbers(release_entries__isnull=False)
    pages = follow(APIClient(), f"{API}/revisions/?page_size=4")
    assert keys_of(pages, "number") == released
    assert pages[0]["count"] == len(released)


def token(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        "junk",
        "!!!",
        token("x:3"),
        token("n:-1"),
        token("n:3:4"),
        token(f"n:{2**63}"),
        token("n:03"),
        "bjox\x01",
        "bjox==",
    ],
)
def test_an_invalid_cursor_is_a_400_with_its_code(seeded, viewer, reviewer, cursor):
    publish(reviewer, notes="Seed")  # the public reads CP22-003's revisions
    for client in (token_client(viewer), APIClient()):
        for url in (f"{API}/revisions/", f"{API}/cases/CP22-003/revisions/"):
            response = client.get(url, {"cursor": cursor})
            assert response.status_code == 400
            (error,) = response.json()["errors"]
            assert (error["code"], error["path"]) == ("pagination.cursor_invalid", "cursor")


@pytest.mark.parametrize("size", ["0", "-1", "x", "1.5"])
def test_the_feed_refuses_a_malformed_page_size(seeded, viewer, size):
    """As the numbered pages do: never read as the default, so the schema's minimum holds."""
    for url in (f"{API}/revisions/", f"{API}/cases/CP22-003/revisions/"):
        response = token_client(viewer).get(url, {"page_size": size})
        assert response.status_code == 400
        assert response.json()["errors"][0]["path"] == "page_size"


def test_a_case_never_released_is_still_a_404_for_the_public(seeded, viewer):
    """The cursor changes nothing of who sees what: the same 404 as without one."""
    for query in ("", f"?cursor={token('n:0')}", "?cursor=junk"):
        response = APIClient().get(f"{API}/cases/CP22-003/revisions/{query}")
        assert response.status_code == 404
        assert response.json()["errors"][0]["code"] == "record.not_found"


# --- releases and a release's entries -------------------------------------------------------


def test_releases_and_their_entries_page(seeded, reviewer, analyst):
    publish(reviewer, notes="One")
    edit(analyst, "CP22-003", "For two")
    publish(reviewer, notes="Two")
    client = APIClient()
    pages = follow(client, f"{API}/releases/?page_size=1")
    assert keys_of(pages, "number") == [2, 1]
    assert pages[0]["results"][0]["counts"] == {
        "new": 0,
        "updated": 1,
        "withdrawn": 0,
        "unchanged": 17,
    }
    url, entries, counts = f"{API}/releases/2/?page_size=5", [], set()
    while url:
        body = client.get(url).json()
        assert body["number"] == 2
        entries += body["entries"]
        counts.add(body["entries_count"])
        url = body["entries_next"]
    assert counts == {18}
    assert [(e["kind"], e["key"]) for e in entries] == sorted(
        (e["kind"], e["key"]) for e in entries
    )
    assert len({(e["kind"], e["key"]) for e in entries}) == 18
    updated = [e for e in entries if e["change"] == "updated"]
    assert [e["key"] for e in updated] == ["CP22-003"]
    assert updated[0]["previous_revision"] < updated[0]["revision"]
    unchanged = [e for e in entries if e["change"] == "unchanged"]
    assert all(e["previous_revision"] == e["revision"] for e in unchanged)
    last = client.get(f"{API}/releases/2/?page=4&page_size=5").json()
    assert last["entries_next"] is None and "page_size=5" in last["entries_previous"]
    # the entries' pages are linked in a Link header too, followed here from the first
    url, linked = f"{API}/releases/2/?page_size=5", []
    while url:
        response = client.get(url)
        linked += response.json()["entries"]
        links = parse_links(response["Link"])
        assert links.get("next") == response.json()["entries_next"]
        assert links.get("prev") == response.json()["entries_previous"]
        url = links.get("next")
    assert linked == entries
    assert (
        parse_links(response["Link"])["first"] == f"http://testserver{API}/releases/2/?page_size=5"
    )


# --- Link headers and entity tags -----------------------------------------------------------


def parse_links(header: str) -> dict[str, str]:
    """``{"next": url, …}`` of an RFC 8288 Link header."""
    links = {}
    for part in header.split(", <"):
        url, rel = part.lstrip("<").split('>; rel="')
        links[rel.rstrip('"')] = url
    return links


def test_numbered_pages_carry_link_headers_beside_the_body_links(seeded, viewer):
    client = token_client(viewer)
    first = client.get(f"{API}/sources/?page_size=2&ordering=key")
    links = parse_links(first["Link"])
    assert set(links) == {"first", "next", "last"}  # no prev on the first page
    assert links["next"] == first.json()["next"]
    assert links["first"] == "http://testserver/api/v1/sources/?ordering=key&page_size=2"
    last = client.get(links["last"])
    assert last.json()["next"] is None
    assert set(parse_links(last["Link"])) == {"first", "prev", "last"}
    assert parse_links(last["Link"])["prev"] == last.json()["previous"]
    # every page is reached from the first by following rel="next"
    pages, url = [], links["first"]
    while url:
        response = client.get(url)
        pages.append(response.json())
        url = parse_links(response["Link"]).get("next")
    assert keys_of(pages) == sorted(s["key"] for s in seeded["sources"])


def test_list_pages_carry_an_etag_and_answer_304_while_unchanged(seeded, viewer, analyst):
    client = token_client(viewer)
    response = client.get(f"{API}/cases/?page_size=2")
    etag = response["ETag"]
    assert etag.startswith('W/"')
    assert client.get(f"{API}/cases/?page_size=2")["ETag"] == etag
    cached = client.get(f"{API}/cases/?page_size=2", HTTP_IF_NONE_MATCH=etag)
    assert cached.status_code == 304 and cached.content == b""
    assert cached["ETag"] == etag
    # a strong spelling of the same tag matches too (If-None-Match compares weakly)
    strong = etag.removeprefix("W/")
    assert client.get(f"{API}/cases/?page_size=2", HTTP_IF_NONE_MATCH=strong).status_code == 304
    first_key = response.json()["results"][0]["key"]
    document = record_document("case", first_key)
    document["title"] = "Changed"
    record_update(kind="case", key=first_key, document=document, user=analyst, summary="Edit")
    changed = client.get(f"{API}/cases/?page_size=2", HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200 and changed["ETag"] != etag


def test_the_feed_gives_its_cursor_beside_its_links(seeded, viewer):
    client = token_client(viewer)
    page = client.get(f"{API}/revisions/?page_size=3")
    body = page.json()
    assert body["previous"] is None and body["previous_cursor"] is None
    assert body["next"].endswith(f"cursor={body['next_cursor']}&page_size=3") or (
        f"cursor={body['next_cursor']}" in body["next"]
    )
    links = parse_links(page["Link"])
    first = "http://testserver/api/v1/revisions/?page_size=3"
    assert links == {"first": first, "next": body["next"]}
    # the cursor alone reaches the page the link does
    by_cursor = client.get(f"{API}/revisions/", {"page_size": 3, "cursor": body["next_cursor"]})
    assert by_cursor.json()["results"] == client.get(body["next"]).json()["results"]
    assert by_cursor.json()["previous_cursor"]
    assert parse_links(by_cursor["Link"])["prev"] == by_cursor.json()["previous"]
