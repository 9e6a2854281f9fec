"""Tags are normalized on every write (NFKC, case-folded, invisible characters removed), and
a new tag that only looks like one in use is refused, naming it."""

from __future__ import annotations

import pytest

from claimsdb.records import RuleViolations, record_document
from claimsdb.records.schema import normalize_tag
from claimsdb.services import case_update

from .support import edit_case, signed_in, state, submit, text_of, token_client

CASE = "CP22-003"


@pytest.mark.parametrize(
    "typed, stored",
    [
        ("RDMA", "rdma"),
        ("rdma\u200b", "rdma"),  # zero-width space
        ("\ufeffrd\u00adma", "rdma"),  # byte-order mark, soft hyphen
        ("ＲＤＭＡ", "rdma"),  # fullwidth
        ("Kv  Cache ", "kv cache"),
        ("Straße", "strasse"),
        ("rdma\u202e", "rdma"),  # a bidi override
    ],
)
def test_a_tag_is_stored_in_its_normal_form(typed, stored):
    assert normalize_tag(typed) == stored


def test_three_spellings_of_one_tag_are_one_tag(seeded, analyst):
    edit_case(analyst, CASE, tags=["rdma", "RDMA", "rdma\u200b", "Kv-Cache", "\u200b"])
    assert record_document("case", CASE)["tags"] == ["kv-cache", "rdma"]


def test_the_api_stores_the_normal_form(seeded, analyst):
    response = token_client(analyst).patch(
        f"/api/v1/cases/{CASE}/?summary=s", {"tags": ["SGLang", "RDMA"]}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["tags"] == ["rdma", "sglang"]


@pytest.mark.parametrize("typed", ["kvcache", "kv_cache", "KV.Cache", "kv cache"])
def test_a_near_duplicate_of_a_tag_in_use_is_refused_naming_it(seeded, analyst, typed):
    document = record_document("case", CASE)
    document["tags"] = ["rdma", typed]
    before = state()
    with pytest.raises(RuleViolations) as refused:
        case_update(user=analyst, key=CASE, document=document, summary="Tags")
    ((code, path, message),) = [(v.code, v.path, v.message) for v in refused.value.violations]
    assert (code, path) == ("case.tag_near_duplicate", "tags[0]")
    assert "use 'kv-cache'" in message
    assert state() == before


def test_a_tag_in_use_and_a_distinct_new_tag_are_taken(seeded, analyst):
    edit_case(analyst, CASE, tags=["kv-cache", "rdma", "cache-eviction"])
    assert record_document("case", CASE)["tags"] == ["cache-eviction", "kv-cache", "rdma"]


def test_the_edit_page_suggests_the_tag_in_use(seeded, analyst):
    client = signed_in(analyst)
    response = submit(
        client, f"/cases/{CASE}/edit/", {"case-tags": "rdrna, sglang", "summary": "s"}
    )
    assert response.status_code in (400, 422)
    assert "use 'rdma'" in text_of(response.content.decode())


def test_which_tags_are_in_use_is_one_query_of_the_names_alone(seeded, django_assert_num_queries):
    """The near-duplicate check asks which of a write's tags some case has: one query, by
    name, whatever the number of cases that have them (it once read and sorted every one)."""
    from claimsdb.models import CaseTag
    from claimsdb.selectors.cases import tags_in_use

    existing = set(CaseTag.objects.values_list("name", flat=True)[:2])
    assert existing
    with django_assert_num_queries(1) as captured:
        found = tags_in_use(existing | {"no-such-tag"})
    assert found == existing
    assert '"claimsdb_case"' not in captured.captured_queries[0]["sql"]  # no join, no sort
    assert tags_in_use(set()) == set()
