"""Finding things: search on the start page, filters on the case list."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps as django_apps
from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db import connection, transaction
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from claimsdb import search
from claimsdb.models import ReleaseEntry, SearchEntry
from claimsdb.records import record_document
from claimsdb.services import (
    bundle_load,
    case_update,
    claim_add,
    claim_withdraw,
    record_update,
    record_withdraw,
    source_update,
)
from claimsdb.services.releases import release_publish
from claimsdb.services.search_index import index_release_entries

from .support import assert_inert, edit_case, get_queries, new_case, signed_in, text_of


def test_search_finds_cases_claims_and_sources(seeded, viewer):
    client = signed_in(viewer)
    html = client.get("/", {"q": "aborted request"}).content.decode()
    assert 'href="/cases/CP22-003/"' in html
    html = client.get("/", {"q": "Mooncake"}).content.decode()
    assert "CLM-CP22-003-B" in html
    html = client.get("/", {"q": "checksum"}).content.decode()
    assert 'href="/sources/SRC-SGLANG-PR-39229/"' in html
    html = client.get("/", {"q": "CLM-CP22-002-A"}).content.decode()
    assert "CLM-CP22-002-A" in text_of(html.split('id="h-results"', 1)[1])
    html = client.get("/", {"q": "zebra quokka"}).content.decode()
    assert "Nothing matches" in html


def test_case_list_filters_by_status_tag_and_current_assessment(seeded, viewer, reviewer):
    client = signed_in(viewer)

    def keys(**params):
        html = client.get("/cases/", params).content.decode()
        return [k for k in ("CP22-002", "CP22-003") if f'href="/cases/{k}/"' in html]

    assert keys() == ["CP22-002", "CP22-003"]
    assert keys(tag="rdma") == ["CP22-003"]
    assert keys(tag="production-incident") == ["CP22-002"]
    assert keys(status="draft") == []
    assert keys(**{"a.setting": "research_demonstration"}) == ["CP22-003"]
    assert keys(**{"a.setting": "production_incident"}) == []
    assert keys(**{"a.setting": "nonsense"}) == ["CP22-002", "CP22-003"]  # ignored
    # only the current (newest) assessment counts
    document = record_document("case", "CP22-003")
    newer = dict(document["assessments"][0], assessed_on="2026-12-01")
    newer["values"] = dict(newer["values"], setting="lab_only")
    document["assessments"].append(newer)
    record_update(kind="case", key="CP22-003", document=document, user=reviewer, summary="new")
    assert keys(**{"a.setting": "research_demonstration"}) == []
    assert keys(**{"a.setting": "lab_only", "tag": "rdma", "status": "ready"}) == ["CP22-003"]


def test_case_list_shows_profile_labels(seeded, viewer):
    html = signed_in(viewer).get("/cases/").content.decode()
    assert "Setting: research demonstration" in html
    assert "impact ungraded" in html


# --- the search index: ranking, highlighting, the write path, releases, pages -------------

POSTGRESQL_ONLY = pytest.mark.postgres(
    reason="full-text ranking, ts_headline and the GIN index exist on PostgreSQL only"
)


def hits(query: str, *, released: bool = False, **options) -> list[tuple[str, str]]:
    results = search.search(query, released=released, per_page=100, **options)
    return [(hit.kind, hit.key) for hit in results.page]


def make_cases(user, documents: list[dict]) -> None:
    bundle_load(
        user=user,
        bundle={
            "format": "claimsdb.bundle/1",
            "methods": [],
            "sources": [],
            "cases": documents,
            "rules": [],
        },
        summary="Cases for searching",
    )


def numbered_claim(case_key: str, n: int, statement: str) -> dict:
    return {
        "id": f"CLM-{case_key}-N{n}",
        "statement": statement,
        "status": "unverified",
        "status_note": "",
        "basis": "analyst_inference",
        "origin": "human",
        "evidence": [],
    }


def test_a_write_is_found_in_its_own_transaction(seeded, analyst):
    assert hits("zanzibar") == []
    with transaction.atomic():
        document = record_document("case", "CP22-003")
        old_title = document["title"]
        document["title"] = "Zanzibar transfer overwrite"
        record_update(kind="case", key="CP22-003", document=document, user=analyst, summary="t")
        assert hits("zanzibar") == [("case", "CP22-003")]
        assert ("case", "CP22-003") not in hits(old_title)
    # a claim's statement, a new claim, a source's title
    claim_add(
        user=analyst,
        case_key="CP22-003",
        summary="New claim",
        claim=numbered_claim("CP22-003", 1, "Wombats overwrite the slot."),
    )
    assert hits("wombats") == [("claim", "CLM-CP22-003-N1")]
    document = record_document("source", "SRC-SGLANG-PR-39229")
    document["title"] = "Numbat checksum patch"
    source_update(user=analyst, key="SRC-SGLANG-PR-39229", document=document, summary="t")
    assert hits("numbat") == [("source", "SRC-SGLANG-PR-39229")]
    assert ("source", "SRC-SGLANG-PR-39229") not in hits("verified on decode")


def test_withdrawn_records_stay_in_the_working_search_and_leave_the_public_one(
    seeded, analyst, reviewer, client
):
    """Signed-in users find withdrawn records and claims, marked withdrawn, as every working
    list shows them; the public stops finding a record once a release withdraws it."""
    release_publish(user=reviewer, notes="1")
    assert ("case", "CP22-003") in hits("RDMA", released=True)
    # the affected components rest on claim B: on A first, so that B may be withdrawn
    document = record_document("case", "CP22-003")
    for entry in document["affected"]:
        entry["claims"] = ["CLM-CP22-003-A"]
    case_update(user=analyst, key="CP22-003", document=document, summary="On A")
    claim_withdraw(user=analyst, claim_id="CLM-CP22-003-B", summary="gone")
    record_withdraw(user=reviewer, kind="case", key="CP22-003", summary="gone")
    record_withdraw(user=reviewer, kind="source", key="SRC-SGLANG-PR-39229", summary="gone")
    assert ("case", "CP22-003") in hits("RDMA")
    assert ("claim", "CLM-CP22-003-B") in hits("Mooncake")
    html = signed_in(analyst).get("/", {"q": "Mooncake"}).content.decode()
    assert "withdrawn" in text_of(html.split('id="h-results"', 1)[1])
    # the public sees the release until the next one
    assert ("case", "CP22-003") in hits("RDMA", released=True)
    release_publish(user=reviewer, notes="2: withdrawals")
    assert ("case", "CP22-003") not in hits("RDMA", released=True)
    assert ("claim", "CLM-CP22-003-B") not in hits("Mooncake", released=True)
    assert hits("checksum", released=True) == []
    assert 'href="/cases/CP22-003/"' not in client.get("/", {"q": "RDMA"}).content.decode()


def test_released_search_finds_released_text_only(seeded, analyst, reviewer):
    assert hits("RDMA", released=True) == []
    release_publish(user=reviewer, notes="1")
    edit_case(analyst, "CP22-003", title="Zanzibar working title")
    assert ("case", "CP22-003") in hits("rdma  TRANSFERS", released=True)
    assert ("claim", "CLM-CP22-003-A") in hits("posted RDMA writes", released=True)
    assert hits("zanzibar", released=True) == []
    assert hits("zanzibar") == [("case", "CP22-003")]
    assert ("source", "SRC-SGLANG-PR-35360") in hits("NIXL backend", released=True)
    assert hits("cp22-002", released=True)[0] == ("case", "CP22-002")
    assert hits("CLM-CP22-003-B", released=True)[0] == ("claim", "CLM-CP22-003-B")
    assert hits("   ", released=True) == []


MARKER = "DRAFT-MARKER-7f3a"


def test_the_public_never_sees_draft_text_in_search(seeded, analyst, reviewer, client, nobody):
    release_publish(user=reviewer, notes="1")
    released_title = record_document("case", "CP22-003")["title"]
    draft = f"{MARKER} quokka RDMA draft"
    document = record_document("case", "CP22-003")
    document.update(title=draft, summary=draft)
    record_update(kind="case", key="CP22-003", document=document, user=analyst, summary="d")
    claim_add(
        user=analyst,
        case_key="CP22-003",
        summary="Draft claim",
        claim=numbered_claim("CP22-003", 9, draft),
    )
    document = record_document("source", "SRC-SGLANG-PR-39229")
    document["title"] = draft
    source_update(user=analyst, key="SRC-SGLANG-PR-39229", document=document, summary="t")
    for visitor in (client, signed_in(nobody)):
        for query in ("RDMA", "quokka", "draft", "CLM-CP22-003-N9", "SGLang"):
            for kind in ("", "case", "claim", "source"):
                html = visitor.get("/", {"q": query, "kind": kind}).content.decode()
                assert MARKER not in html, (query, kind)
        # the page echoes the query itself: nothing else of it
        assert "Nothing matches" in visitor.get("/", {"q": MARKER}).content.decode()
        html = visitor.get("/", {"q": "RDMA"}).content.decode()
        assert released_title in text_of(html)
    assert hits(MARKER, released=True) == hits("quokka", released=True) == []
    assert MARKER in signed_in(analyst).get("/", {"q": "quokka"}).content.decode()


def test_hits_are_highlighted_and_hostile_text_stays_escaped(seeded, analyst):
    hostile = '<script>alert(1)</script> wombat <img src=x onerror=alert(1)> "&amp;'
    markers = f"wombat {search.START}<b>{search.STOP} end"
    make_cases(
        analyst,
        [
            new_case("CP99-001", title=hostile, summary=hostile),
            new_case("CP99-002", title=markers, summary="wombat " * 80 + "last words"),
        ],
    )
    results = search.search("wombat", released=False)
    by_key = {hit.key: hit for hit in results.page}
    title = str(by_key["CP99-001"].title)
    assert "<mark>wombat</mark>" in title
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in title and "<script" not in title
    assert "&lt;img src=x onerror=alert(1)&gt;" in title and "&amp;amp;" in title
    other = str(by_key["CP99-002"].title)
    assert "&lt;b&gt;" in other and other.count("<mark>") == other.count("</mark>") == 1
    if connection.vendor == "postgresql":  # ts_headline never sees the text's own markers
        assert search.START not in other and search.STOP not in other
    # a long text is an excerpt
    summary = str(by_key["CP99-002"].text)
    assert "<mark>wombat</mark>" in summary and "…" in summary and len(summary) < 2000
    html = signed_in(analyst).get("/", {"q": "wombat"}).content.decode()
    assert_inert(html)
    assert "<mark>wombat</mark>" in html
    html = signed_in(analyst).get("/", {"q": "<script>alert(1)</script>"}).content.decode()
    assert_inert(html)


def test_sqlite_word_match_highlights_every_word(db):
    html = str(search.highlight("RDMA transfers; rdma <b>", ["rdma", "<b>"]))
    assert html == "<mark>RDMA</mark> transfers; <mark>rdma</mark> <mark>&lt;b&gt;</mark>"
    long = " ".join(f"w{i}" for i in range(100)) + " needle " + "tail " * 50
    excerpt = str(search.highlight(long, ["needle"], excerpt_words=10))
    assert excerpt.startswith("… ") and excerpt.endswith(" …")
    assert "<mark>needle</mark>" in excerpt and len(excerpt.split()) <= 14


def test_exact_key_first_then_rank_then_kind_and_key(seeded, analyst):
    make_cases(
        analyst,
        [
            new_case("CP99-003", summary="A wombat appears once in the summary."),
            new_case("CP99-001", title="Wombat wombat burrow"),
            new_case(
                "CP99-002",
                title="Burrow",
                summary="wombat",
                claims=[numbered_claim("CP99-002", 1, "The wombat was seen.")],
            ),
        ],
    )
    found = hits("wombat")
    assert sorted(found) == [
        ("case", "CP99-001"),
        ("case", "CP99-002"),
        ("case", "CP99-003"),
        ("claim", "CLM-CP99-002-N1"),
    ]
    if connection.vendor != "postgresql":
        assert found == sorted(found)  # by kind, then key
    assert hits("cp99-002")[0] == ("case", "CP99-002")
    assert hits("CLM-CP99-002-N1") == [("claim", "CLM-CP99-002-N1")]


@POSTGRESQL_ONLY
def test_postgresql_ranks_titles_above_texts_and_stems_words(seeded, analyst):
    make_cases(
        analyst,
        [
            new_case("CP99-003", summary="A wombat appears once in the summary."),
            new_case("CP99-001", title="Wombat wombat burrow"),
            new_case(
                "CP99-002",
                title="Burrow",
                summary="wombat",
                claims=[numbered_claim("CP99-002", 1, "The wombat was seen.")],
            ),
            new_case("CP99-004", title="Wombat"),
        ],
    )
    found = hits("wombat")
    # in the title twice, in the title once, then once in a summary or statement
    assert found[:2] == [("case", "CP99-001"), ("case", "CP99-004")]
    assert set(found[2:]) == {
        ("case", "CP99-002"),
        ("case", "CP99-003"),
        ("claim", "CLM-CP99-002-N1"),
    }
    assert ("case", "CP99-001") in hits("wombats burrowing")  # stemmed
    assert set(hits("wombat -burrow")) == {  # websearch syntax
        ("case", "CP99-003"),
        ("case", "CP99-004"),
        ("claim", "CLM-CP99-002-N1"),
    }
    results = search.search("wombat", released=False)
    title = [hit.title for hit in results.page][0]
    assert title == "<mark>Wombat</mark> <mark>wombat</mark> burrow"
    ranks = list(
        SearchEntry.objects.filter(scope="working", kind="case", key__startswith="CP99")
        .annotate(rank=SearchRank(F("vector"), SearchQuery("wombat", config="english")))
        .order_by("-rank", "kind", "key")
        .values_list("key", flat=True)
    )
    assert ranks[0] == "CP99-001"


@POSTGRESQL_ONLY
def test_postgresql_keeps_the_vectors_in_gin_indexes_one_per_scope(seeded):
    """The stored vector is generated by the database and indexed. (Whether the planner uses
    the index depends on the table's size: docs/search.md shows a plan at scale.)"""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s",
            [SearchEntry._meta.db_table],
        )
        indexes = dict(cursor.fetchall())
    for scope in ("working", "released"):
        definition = indexes[f"search_vector_{scope}"]
        assert "USING gin (vector)" in definition and f"'{scope}'" in definition
    entry = SearchEntry.objects.get(scope="working", kind="case", key="CP22-003")
    assert "'rdma':" in entry.vector and "A" in entry.vector  # title words weighted A


def test_results_page_in_a_stable_order_with_counts(seeded, analyst, viewer):
    make_cases(
        analyst,
        [
            new_case(
                f"CP99-{n:03d}",
                title=f"Wombat case {n}",
                claims=[numbered_claim(f"CP99-{n:03d}", 1, f"Wombat claim {n}.")],
            )
            for n in range(25)
        ],
    )
    seen = []
    for number in (1, 2, 3):
        page = search.search("wombat", released=False, page=number).page
        assert page.paginator.count == 50
        seen += [(hit.kind, hit.key) for hit in page]
    assert len(seen) == len(set(seen)) == 50
    assert seen == hits("wombat")
    cases_only = search.search("wombat", released=False, kind="claim", page=2)
    assert cases_only.counts == {"case": 25, "claim": 25, "component": 0, "source": 0}
    assert [hit.kind for hit in cases_only.page] == ["claim"] * 5
    # out of range: the last page; nonsense: the first
    assert search.search("wombat", released=False, page=99).page.number == 3
    assert search.search("wombat", released=False, page="x").page.number == 1
    html = signed_in(viewer).get("/", {"q": "wombat", "page": 2}).content.decode()
    assert "21–40 of 50" in html and "page 2 of 3" in html
    assert "claims (25)" in html and "cases (25)" in html and "everything (50)" in html
    assert 'href="?q=wombat&amp;page=3"' in html and 'href="?q=wombat&amp;page=1"' in html
    html = signed_in(viewer).get("/", {"q": "wombat", "kind": "claim"}).content.decode()
    assert "1–20 of 25" in html and 'href="?q=wombat&amp;kind=claim&amp;page=2"' in html


@pytest.mark.parametrize("released", [False, True])
def test_a_results_page_runs_the_same_queries_at_two_sizes(
    seeded, analyst, reviewer, viewer, client, released
):
    def add(start: int, count: int) -> None:
        make_cases(
            reviewer,
            [
                new_case(
                    f"CP99-{n:03d}",
                    title=f"Wombat case {n}",
                    status="ready",
                    claims=[numbered_claim(f"CP99-{n:03d}", 1, f"Wombat claim {n}.")],
                )
                for n in range(start, start + count)
            ],
        )
        if released:
            release_publish(user=reviewer, notes=f"{start}")

    visitor = client if released else signed_in(viewer)
    visitor.get("/")
    add(0, 15)
    urls = ["/?q=wombat", "/?q=wombat&page=2", "/?q=wombat&kind=claim", "/?q=CP99-001"]
    few = {url: get_queries(visitor, url) for url in urls}
    add(15, 45)
    many = {url: get_queries(visitor, url) for url in urls}
    assert few == many, (few, many)
    assert search.search("wombat", released=released).counts["case"] == 60


def test_an_unchanged_release_entry_is_not_reindexed(seeded, reviewer, analyst):
    release_publish(user=reviewer, notes="1")
    document = record_document("case", "CP22-002")
    document["summary"] = "Wombat summary"
    record_update(kind="case", key="CP22-002", document=document, user=analyst, summary="s")
    release = release_publish(user=reviewer, notes="2")
    entries = list(ReleaseEntry.objects.filter(release=release))
    assert {e.change for e in entries} == {"unchanged", "updated"}
    unchanged = [e for e in entries if e.change == "unchanged"]
    with CaptureQueriesContext(connection) as queries:
        index_release_entries(unchanged)
    assert len(queries) == 0
    assert hits("wombat", released=True) == [("case", "CP22-002")]


def test_the_migration_fills_the_index_as_the_write_path_does(seeded, reviewer, analyst):
    release_publish(user=reviewer, notes="1")
    edit_case(analyst, "CP22-003", title="Zanzibar working title")
    fields = ("scope", "kind", "key", "case_key", "status", "source_kind", "title", "text")

    def index() -> list[tuple]:
        return sorted(SearchEntry.objects.values_list(*fields, "revision"))

    # components came after 0008 (0015): a database it migrated held none
    written = [row for row in index() if row[1] != "component"]
    assert {row[0] for row in written} == {"working", "released"}
    SearchEntry.objects.all().delete()
    migration = importlib.import_module("claimsdb.migrations.0008_search_index")
    migration.fill_index(django_apps, None)
    assert index() == [row if row[0] == "released" else (*row[:-1], None) for row in written]


def test_a_results_page_shows_the_results_alone(seeded, viewer):
    client = signed_in(viewer)
    start = client.get("/").content.decode()
    assert "Recent revisions" in start
    found = client.get("/", {"q": "RDMA"}).content.decode()
    assert "Results for" in found and "Recent revisions" not in found
