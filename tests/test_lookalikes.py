"""Keys and figure IDs that differ from an existing one only by characters that look alike
are refused, with the existing one named (claimsdb/lookalike.py)."""

from __future__ import annotations

import pytest

from claimsdb.lookalike import skeleton
from claimsdb.models import Case
from claimsdb.records import RuleViolations, record_document
from claimsdb.services import bundle_load, record_create

from .support import bundle_of, case_doc, new_case, queries_of, state, token_client


def refusals(call) -> list[tuple[str, str, str]]:
    with pytest.raises(RuleViolations) as refused:
        call()
    return [(v.code, v.path, v.message) for v in refused.value.violations]


@pytest.mark.parametrize(
    "a, b",
    [
        ("CP22-003", "CP22-OO3"),
        ("HX-201", "HX-2O1"),
        ("HX-201", "HX-2OI"),
        ("beagle.assessment/1", "beagle.assessrnent/l"),
    ],
)
def test_look_alikes_share_a_skeleton(a, b):
    assert skeleton(a) == skeleton(b)


@pytest.mark.parametrize("a, b", [("CP22-003", "CP22-008"), ("CP22-003", "CP22-03"), ("B", "8")])
def test_different_keys_keep_different_skeletons(a, b):
    assert skeleton(a) != skeleton(b)


def test_a_case_key_that_looks_like_an_existing_one_is_refused_naming_it(seeded, analyst):
    before = state()
    found = refusals(
        lambda: record_create(
            user=analyst, kind="case", document=new_case("CP22-OO3"), summary="Look-alike"
        )
    )
    assert [(code, path) for code, path, _ in found] == [("record.key_lookalike", "key")]
    assert "looks like the existing case CP22-003" in found[0][2]
    assert state() == before
    # a key that merely resembles nothing is taken
    record_create(user=analyst, kind="case", document=new_case("CP22-009"), summary="New")


def test_the_api_refuses_a_look_alike_source_with_its_path(seeded, analyst):
    document = record_document("source", "SRC-SGLANG-PR-35049")
    document["key"] = "SRC-SGLANG-PR-35O49"
    response = token_client(analyst).post("/api/v1/sources/?summary=s", document, format="json")
    assert response.status_code == 400, response.content
    (error,) = response.json()["errors"]
    assert (error["code"], error["path"]) == ("record.key_lookalike", "key")
    assert "SRC-SGLANG-PR-35049" in error["message"]


def test_a_look_alike_figure_id_is_refused(seeded, analyst):
    document = new_case(
        "CP99-001",
        claims=[],
        figures=[
            {
                "id": "FIG-CP22-OO2-RESPONSES",
                "value": 1,
                "unit": "responses",
                "measure": "count",
                "scope": "production",
                "description": "",
                "claims": [],
            }
        ],
    )
    found = refusals(
        lambda: record_create(user=analyst, kind="case", document=document, summary="s")
    )
    assert [(code, path) for code, path, _ in found] == [("record.key_lookalike", "figures[0].id")]
    assert "FIG-CP22-002-RESPONSES" in found[0][2]


def test_two_look_alike_keys_in_one_bundle_are_refused(seeded, reviewer):
    bundle = bundle_of(cases=[new_case("CP99-I01"), new_case("CP99-101")])
    found = refusals(lambda: bundle_load(user=reviewer, bundle=bundle, summary="Both"))
    assert [(code, path) for code, path, _ in found] == [("record.key_lookalike", "cases[1].key")]
    assert "case written in this change CP99-I01" in found[0][2]


def test_an_existing_record_written_again_is_not_its_own_look_alike(seeded, reviewer, seed_bundle):
    bundle = bundle_of(cases=[case_doc(seed_bundle, "CP22-003")])
    bundle_load(user=reviewer, bundle=bundle, summary="Again")


def test_the_lookup_is_one_query_per_kind_however_many_records(seeded, analyst):
    """The skeleton is stored and indexed: checking a key reads the rows that share its
    skeleton, never every key."""
    counts = []
    for number in (1, 2):
        Case.objects.bulk_create(
            Case(key=f"BULK{number}-{i:04d}", key_skeleton=skeleton(f"BULK{number}-{i:04d}"))
            for i in range(200)
        )
        key = f"CP8{number}-001"
        counts.append(
            queries_of(
                lambda key=key: record_create(
                    user=analyst, kind="case", document=new_case(key), summary="s"
                )
            )
        )
    assert counts[0] == counts[1]
    assert Case.objects.get(key="CP81-001").key_skeleton == "CP8l-OOl"
