"""Search over tags, publishers, source and figure keys (and their first parts), a case's
account and basis, each hit naming the field it was found in; on both databases."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from claimsdb import search
from claimsdb.models import SearchEntry
from claimsdb.services import record_create

from .support import get_queries, new_case, publish, signed_in, text_of

CASE = "CP23-001"
SOURCE = "SRC-OPENAI-2023-03-POSTMORTEM"
FIGURE = f"FIG-{CASE}-PLUS-SHARE"


@pytest.fixture
def incident(seeded, reviewer: User) -> None:
    record_create(
        user=reviewer,
        kind="source",
        summary="s",
        document={
            "format": "claimsdb.source/1",
            "key": SOURCE,
            "title": "March 20 outage: what happened",
            "kind": "primary_disclosure",
            "publisher": "OpenAI",
            "url": "",
            "published_on": None,
            "accessed_on": None,
            "reliability": "",
            "notes": "",
            "status": "active",
        },
    )
    figure = {
        "id": FIGURE,
        "value": 1.2,
        "unit": "%",
        "measure": "plus_subscribers_exposed",
        "scope": "production",
        "description": "",
        "claims": [],
    }
    document = new_case(
        CASE,
        title="Users saw other users' chat titles",
        summary="A shared connection returned another user's response.",
        tags=["asyncio", "redis"],
        figures=[figure],
        account="Requests were cancelled after the command was sent; the quokka lingered.",
        basis="The vendor's wallaby postmortem and the upstream issue.",
        status="ready",
    )
    record_create(user=reviewer, kind="case", summary="s", document=document)


def found(query: str, released: bool = False) -> dict[tuple[str, str], str]:
    results = search.search(query, released=released, per_page=100)
    return {(hit.kind, hit.key): hit.matched for hit in results.page}


@pytest.mark.parametrize(
    "query, hit, field",
    [
        ("asyncio", ("case", CASE), "tags"),
        ("OpenAI", ("source", SOURCE), "publisher"),
        ("postmortem", ("source", SOURCE), "key"),
        ("SRC-OPENAI", ("source", SOURCE), "key"),
        ("src-openai-2023", ("source", SOURCE), "key"),
        (FIGURE, ("case", CASE), "figure IDs"),
        (f"FIG-{CASE}-PLUS", ("case", CASE), "figure IDs"),
        ("quokka", ("case", CASE), "full account"),
        ("wallaby", ("case", CASE), "basis"),
        ("chat titles", ("case", CASE), "title"),
        ("shared connection", ("case", CASE), "summary"),
        (SOURCE, ("source", SOURCE), "key"),
    ],
)
def test_search_finds_what_analysts_type_and_names_the_field(incident, query, hit, field):
    assert found(query).get(hit) == field, found(query)


def test_a_key_prefix_does_not_find_other_keys(incident):
    assert ("source", SOURCE) not in found("SRC-SGLANG")
    assert ("case", CASE) not in found("FIG-CP22")


def test_the_account_text_is_shown_as_the_excerpt(incident):
    hit = next(h for h in search.search("quokka", released=False).page if h.key == CASE)
    assert "<mark>quokka</mark>" in str(hit.text)


def test_the_page_names_the_field(incident, viewer):
    html = signed_in(viewer).get("/", {"q": "asyncio"}).content.decode()
    assert "found in its tags" in text_of(html)


def test_released_entries_hold_the_same_fields(incident, reviewer):
    assert found("asyncio", released=True) == {}
    publish(reviewer, notes="With the incident")
    assert found("asyncio", released=True).get(("case", CASE)) == "tags"
    assert found("OpenAI", released=True).get(("source", SOURCE)) == "publisher"


def test_a_search_takes_as_many_queries_as_before(incident, viewer):
    client = signed_in(viewer)
    client.get("/")
    assert get_queries(client, "/?q=asyncio") == get_queries(client, "/?q=RDMA")


def test_retagging_a_case_reindexes_it(incident, reviewer):
    from claimsdb.records import record_document
    from claimsdb.services import record_update

    document = record_document("case", CASE)
    document["tags"] = ["connection-pool"]
    record_update(kind="case", key=CASE, document=document, user=reviewer, summary="retag")
    assert ("case", CASE) not in found("asyncio")
    assert found("connection-pool").get(("case", CASE)) == "tags"
    assert SearchEntry.objects.filter(scope="working", key=CASE).count() == 1
