"""Components and a case's affected components: the seed, the field rules on every write
path (each refusal with its code and path, writing nothing), and the reads built on them.

The generic behaviour every kind owes (round trips, bundles, exports, releases, pages,
endpoints, its write role) is tested for components by tests/test_kinds.py.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from claimsdb import versions
from claimsdb.models import AffectedEntry, Component
from claimsdb.records import RuleViolations, record_document
from claimsdb.selectors import components as component_reads
from claimsdb.services import (
    bundle_load,
    case_update,
    claim_withdraw,
    component_create,
    component_update,
    component_withdraw,
    record_patch,
)

from .support import (
    api_client,
    body,
    field_block,
    signed_in,
    state,
    submit,
    text_of,
)

CASE = "CP22-003"
BACKENDS = ["CMP-MOONCAKE", "CMP-NIXL", "CMP-MORI"]
EVIDENCE = "CLM-CP22-003-B"


def component(key: str = "CMP-NEW", **fields: Any) -> dict[str, Any]:
    return {
        "format": "claimsdb.component/1",
        "key": key,
        "name": key.removeprefix("CMP-").title(),
        "kind": "library",
        "purl": "",
        "version_scheme": "pypi",
        "homepage": "",
        "aliases": [],
        "relations": [],
        "status": "active",
        **fields,
    }


def entry(component_key: str = "CMP-SGLANG", **fields: Any) -> dict[str, Any]:
    return {
        "component": component_key,
        "status": "affected",
        "ranges": [],
        "versions": [],
        "claims": [EVIDENCE],
        "note": "",
        **fields,
    }


def with_entry(**fields: Any) -> dict[str, Any]:
    """CP22-003 with one more affected entry (SGLang, a pypi component, by default)."""
    document = record_document("case", CASE)
    document["affected"].append(entry(**fields))
    return document


def refused(call) -> set[tuple[str, str]]:
    with pytest.raises(RuleViolations) as raised:
        call()
    return {(v.code, v.path) for v in raised.value.violations}


# --- the seed -------------------------------------------------------------------------------


def test_the_seed_states_the_three_backends_affected_on_claim_b_and_no_version(seeded):
    document = record_document("case", CASE)
    assert [a["component"] for a in document["affected"]] == [
        "CMP-MOONCAKE",
        "CMP-NIXL",
        "CMP-MORI",
    ]
    for item in document["affected"]:
        assert item["status"] == "affected"
        assert item["claims"] == [EVIDENCE]
        assert item["ranges"] == [] and item["versions"] == []
    # the other case names no component, and its document has no affected list at all
    assert "affected" not in record_document("case", "CP22-002")
    purls = dict(Component.objects.values_list("key", "purl"))
    assert purls == {
        "CMP-SGLANG": "pkg:pypi/sglang",
        "CMP-MOONCAKE": "pkg:github/kvcache-ai/mooncake",
        "CMP-NIXL": "pkg:github/ai-dynamo/nixl",
        "CMP-MORI": "",
    }


# --- the field rules, through the services ------------------------------------------------

VERSIONED = [{"events": [{"introduced": "0.4.0"}, {"fixed": "0.5.3"}]}]

REFUSED_ENTRIES = [
    # (what, the entry's fields, the (code, path) pairs refused)
    (
        "no such component",
        {"component": "CMP-NOTHING"},
        {("affected.component_unknown", "affected[3].component")},
    ),
    (
        "the same component twice",
        {"component": "CMP-MOONCAKE"},
        {("affected.component_duplicate", "affected[3].component")},
    ),
    (
        "no claim, yet affected",
        {"claims": []},
        {("affected.evidence_required", "affected[3].claims")},
    ),
    (
        "an unverified claim is no evidence",
        {"claims": ["CLM-CP22-003-A"], "status": "fixed", "_claim_status": "unverified"},
        {("affected.evidence_required", "affected[3].claims")},
    ),
    (
        "another case's claim",
        {"claims": ["CLM-CP22-002-A"]},
        {
            ("affected.claim_foreign", "affected[3].claims[0]"),
            ("affected.evidence_required", "affected[3].claims"),
        },
    ),
    (
        "a range that does not start with introduced",
        {"ranges": [{"events": [{"fixed": "0.5.3"}]}]},
        {("affected.range_invalid", "affected[3].ranges[0].events[0]")},
    ),
    (
        "a range out of order in the scheme",
        {"ranges": [{"events": [{"introduced": "0.5.10"}, {"fixed": "0.5.9"}]}]},
        {("affected.range_invalid", "affected[3].ranges[0].events[1].fixed")},
    ),
    (
        "fixed and last_affected in one range",
        {"ranges": [{"events": [{"introduced": "0"}, {"fixed": "1.0"}, {"last_affected": "2.0"}]}]},
        {("affected.range_invalid", "affected[3].ranges[0].events[2]")},
    ),
    (
        "an event of two keys",
        {"ranges": [{"events": [{"introduced": "0", "fixed": "1.0"}]}]},
        {("affected.range_invalid", "affected[3].ranges[0].events[0]")},
    ),
    (
        "an unknown event",
        {"ranges": [{"events": [{"introduced": "0"}, {"patched": "1.0"}]}]},
        {("affected.range_invalid", "affected[3].ranges[0].events[1]")},
    ),
    (
        "a version that is not one of the scheme",
        {"ranges": [{"events": [{"introduced": "not a version"}]}]},
        {("affected.range_invalid", "affected[3].ranges[0].events[0].introduced")},
    ),
    (
        "an empty range",
        {"ranges": [{"events": []}]},
        {("affected.range_invalid", "affected[3].ranges[0].events")},
    ),
    (
        "an explicit version outside the scheme",
        {"versions": ["0.5.3", "latest and greatest"]},
        {("affected.version_invalid", "affected[3].versions[1]")},
    ),
    (
        "an explicit version twice",
        {"versions": ["0.5.3", "0.5.3"]},
        {("affected.version_invalid", "affected[3].versions[1]")},
    ),
]


@pytest.mark.parametrize(
    "fields, expected", [c[1:] for c in REFUSED_ENTRIES], ids=[c[0] for c in REFUSED_ENTRIES]
)
def test_each_affected_rule_refuses_with_its_code_and_path_and_writes_nothing(
    seeded, analyst, fields, expected
):
    fields = dict(fields)
    claim_status = fields.pop("_claim_status", None)
    document = with_entry(**fields)
    if claim_status:
        document["claims"][0]["status"] = claim_status
    before = state()
    assert (
        refused(lambda: case_update(user=analyst, key=CASE, document=document, summary="Refused"))
        == expected
    )
    assert state() == before


def test_a_well_formed_entry_is_written_and_reads_back(seeded, analyst):
    document = with_entry(
        status="fixed",
        ranges=[{"events": [{"introduced": "0"}, {"fixed": "0.5.10"}]}],
        versions=["0.5.9", "0.5.10rc1"],
        note="Deferred release landed upstream.",
    )
    outcome = case_update(user=analyst, key=CASE, document=document, summary="SGLang fixed")
    assert outcome.outcome == "updated"
    assert record_document("case", CASE) == document
    stored = AffectedEntry.objects.get(case__key=CASE, component__key="CMP-SGLANG")
    assert (stored.position, stored.status, stored.versions) == (3, "fixed", ["0.5.9", "0.5.10rc1"])


def test_an_entry_under_investigation_may_rest_on_no_claim(seeded, analyst):
    document = with_entry(status="under_investigation", claims=[])
    case_update(user=analyst, key=CASE, document=document, summary="Looking into SGLang")
    assert record_document("case", CASE)["affected"][3]["claims"] == []


def test_a_withdrawn_claim_cannot_be_the_only_evidence(seeded, analyst):
    """Withdrawing the one claim an entry rests on is refused at the entry; naming a
    withdrawn claim alone is refused too, even for an entry under investigation."""
    before = state()
    assert refused(
        lambda: claim_withdraw(
            user=analyst, claim_id=EVIDENCE, reason="Not what the report says.", summary="W"
        )
    ) == {("affected.evidence_withdrawn", f"affected[{i}].claims") for i in range(3)}
    assert state() == before
    document = with_entry(status="under_investigation", claims=["CLM-CP22-003-A"])
    document["claims"][0]["status"] = "withdrawn"
    document["claims"][0]["status_note"] = "Withdrawn."
    assert refused(lambda: case_update(user=analyst, key=CASE, document=document, summary="R")) == {
        ("affected.evidence_withdrawn", "affected[3].claims")
    }
    # beside a supported claim, a withdrawn one is not the only evidence
    document["affected"][3]["claims"] = ["CLM-CP22-003-A", EVIDENCE]
    document["affected"][3]["status"] = "affected"
    case_update(user=analyst, key=CASE, document=document, summary="Two claims")


def test_a_withdrawn_component_cannot_be_named(seeded, analyst):
    component_create(user=analyst, document=component("CMP-OLD"), summary="Old")
    component_withdraw(user=analyst, key="CMP-OLD", summary="A mistake")
    before = state()
    assert refused(
        lambda: case_update(
            user=analyst, key=CASE, document=with_entry(component="CMP-OLD"), summary="R"
        )
    ) == {("affected.component_withdrawn", "affected[3].component")}
    assert state() == before


def test_a_component_cases_name_cannot_be_withdrawn(seeded, analyst):
    before = state()
    problems = refused(lambda: component_withdraw(user=analyst, key="CMP-NIXL", summary="Withdraw"))
    assert problems == {("component.in_use", "status")}
    assert state() == before


def test_ranges_are_ordered_in_the_components_own_scheme(seeded, analyst):
    """0.5.10 comes after 0.5.9 in PEP 440 and in SemVer, never as text; Debian's epochs
    and tildes order as Debian orders them."""
    assert not list(versions.range_problems("pypi", [{"introduced": "0.5.9"}, {"fixed": "0.5.10"}]))
    assert list(versions.range_problems("pypi", [{"introduced": "0.5.10"}, {"fixed": "0.5.9"}]))
    assert not list(
        versions.range_problems("semver", [{"introduced": "1.9.0"}, {"fixed": "1.10.0"}])
    )
    assert not list(versions.range_problems("deb", [{"introduced": "1.0~rc1"}, {"fixed": "1.0"}]))
    assert list(versions.range_problems("deb", [{"introduced": "1:0.9"}, {"fixed": "2.0"}]))
    document = with_entry(ranges=[{"events": [{"introduced": "0.5.9"}, {"fixed": "0.5.10"}]}])
    case_update(user=analyst, key=CASE, document=document, summary="Ordered")
    assert versions.in_ranges("pypi", "0.5.9", document["affected"][3]["ranges"]) is True
    assert versions.in_ranges("pypi", "0.5.10", document["affected"][3]["ranges"]) is False
    assert versions.in_ranges("pypi", "0.4", document["affected"][3]["ranges"]) is False


COMPONENT_REFUSALS = [
    ("a Package URL that is not one", {"purl": "pypi/sglang"}, ("component.purl_invalid", "purl")),
    ("an alias twice", {"aliases": ["x", "x"]}, ("component.alias_duplicate", "aliases[1]")),
    ("the name as an alias", {"aliases": ["New"]}, ("component.alias_duplicate", "aliases[0]")),
    (
        "a relation to nothing",
        {"relations": [{"component": "CMP-GONE", "kind": "same_component", "note": ""}]},
        ("component.relation_unknown", "relations[0].component"),
    ),
    (
        "a relation to itself",
        {"relations": [{"component": "CMP-NEW", "kind": "same_component", "note": ""}]},
        ("component.relation_unknown", "relations[0].component"),
    ),
    (
        "a relation twice",
        {
            "relations": [
                {"component": "CMP-NIXL", "kind": "same_component", "note": ""},
                {"component": "CMP-NIXL", "kind": "same_component", "note": "again"},
            ]
        },
        ("component.relation_duplicate", "relations[1]"),
    ),
    ("a scheme univers does not know", {"version_scheme": "calver"}, None),
]


@pytest.mark.parametrize(
    "fields, expected",
    [c[1:] for c in COMPONENT_REFUSALS],
    ids=[c[0] for c in COMPONENT_REFUSALS],
)
def test_each_component_rule_refuses_with_its_code_and_path(seeded, analyst, fields, expected):
    from claimsdb.records import parse_document

    document = component(**fields)
    before = state()
    if expected is None:  # a vocabulary of the schema: refused before any rule runs
        with pytest.raises(RuleViolations) as raised:
            parse_document(document)
        assert raised.value.codes == ["document.invalid_value"]
    else:
        assert refused(lambda: component_create(user=analyst, document=document, summary="R")) == {
            expected
        }
    assert state() == before


def test_same_component_relates_two_records_and_is_undone_by_removing_it(seeded, analyst):
    component_create(
        user=analyst,
        document=component(
            "CMP-NIXL-OLD",
            relations=[{"component": "CMP-NIXL", "kind": "same_component", "note": "renamed"}],
        ),
        summary="The old name",
    )
    assert component_reads.related_to("CMP-NIXL") == [
        {
            "component": "CMP-NIXL-OLD",
            "name": "Nixl-Old",
            "kind": "same_component",
            "note": "renamed",
        }
    ]
    # both records stay, each with its history: nothing is merged
    assert Component.objects.filter(key__in=["CMP-NIXL", "CMP-NIXL-OLD"]).count() == 2
    record_patch(
        user=analyst, kind="component", key="CMP-NIXL-OLD", patch={"relations": []}, summary="U"
    )
    assert component_reads.related_to("CMP-NIXL") == []


def test_components_are_found_by_name_and_alias_case_folded_and_never_guessed(seeded, analyst):
    component_create(
        user=analyst,
        document=component("CMP-MOONCAKE-FORK", name="Mooncake fork", aliases=["mooncake"]),
        summary="A fork the harness also calls mooncake",
    )
    found = component_reads.components_by_name(["mooncake", "NIXL", "Mori", "nccl", ""])
    assert found == {
        "mooncake": ["CMP-MOONCAKE", "CMP-MOONCAKE-FORK"],
        "NIXL": ["CMP-NIXL"],
        "Mori": ["CMP-MORI"],
    }
    assert component_reads.components_by_purl(["pkg:pypi/sglang", "pkg:pypi/other"]) == {
        "pkg:pypi/sglang": ["CMP-SGLANG"]
    }
    # renaming a component moves its names with it
    component_update(
        user=analyst,
        key="CMP-MOONCAKE-FORK",
        document=component("CMP-MOONCAKE-FORK", name="Mooncake fork", aliases=["mc-fork"]),
        summary="Renamed",
    )
    assert component_reads.components_by_name(["mooncake", "MC-FORK"]) == {
        "mooncake": ["CMP-MOONCAKE"],
        "MC-FORK": ["CMP-MOONCAKE-FORK"],
    }


# --- the other write paths ----------------------------------------------------------------


def test_the_api_refuses_an_entry_with_its_code_and_path(seeded, analyst):
    client = api_client(analyst)
    url = f"/api/v1/cases/{CASE}/"
    etag = client.get(url)["ETag"]
    before = state()
    document = with_entry(ranges=[{"events": [{"introduced": "2.0"}, {"fixed": "1.0"}]}])
    response = client.put(
        url + "?summary=Refused",
        data=json.dumps(document),
        content_type="application/json",
        HTTP_IF_MATCH=etag,
    )
    assert response.status_code in (400, 422), response.content
    errors = body(response)["errors"]
    assert [(e["code"], e["path"]) for e in errors] == [
        ("affected.range_invalid", "affected[3].ranges[0].events[1].fixed")
    ]
    assert state() == before
    component_response = client.post(
        "/api/v1/components/?summary=New",
        data=json.dumps(component(purl="not a purl")),
        content_type="application/json",
    )
    assert [(e["code"], e["path"]) for e in body(component_response)["errors"]] == [
        ("component.purl_invalid", "purl")
    ]
    assert state() == before


def test_withdrawing_the_only_evidence_over_the_api_is_refused_at_the_entries(seeded, analyst):
    before = state()
    response = api_client(analyst).delete(f"/api/v1/claims/{EVIDENCE}/?summary=Withdraw")
    assert response.status_code == 400, response.content
    assert [(e["code"], e["path"]) for e in body(response)["errors"]] == [
        ("affected.evidence_withdrawn", f"affected[{i}].claims") for i in range(3)
    ]
    assert state() == before


def test_a_bundle_is_refused_at_the_entrys_path_in_the_bundle(seeded, analyst):
    case = with_entry(component="CMP-LATER", versions=["1.0"])
    bundle = {
        "format": "claimsdb.bundle/1",
        "methods": [],
        "sources": [],
        "components": [],
        "cases": [case],
        "rules": [],
    }
    before = state()
    assert refused(lambda: bundle_load(user=analyst, bundle=bundle, summary="R")) == {
        ("affected.component_unknown", "cases[0].affected[3].component")
    }
    assert state() == before
    # a component of the same bundle counts as existing: components are written first
    bundle["components"] = [component("CMP-LATER")]
    outcomes = bundle_load(user=analyst, bundle=bundle, summary="Both")
    assert [(o.kind, o.outcome) for o in outcomes] == [
        ("component", "created"),
        ("case", "updated"),
    ]


def test_an_import_onto_a_case_whose_entry_breaks_a_rule_is_held_and_writes_nothing(
    seeded, analyst
):
    """The importer writes the case through the one write path: a case whose affected
    entry no longer holds (its component withdrawn behind the service layer) is refused
    with the rule's code and path, and the import stores nothing but its report."""
    from pathlib import Path

    from claimsdb.importers import repro_results
    from claimsdb.importers.repro_results import ResultsImporter
    from claimsdb.models import ReproductionRun

    Component.objects.filter(key="CMP-MORI").update(status="withdrawn")
    sample = Path(__file__).resolve().parent.parent / "fixtures/repro/valid/valid-small.json"
    before = ReproductionRun.objects.count()
    report = ResultsImporter(user=analyst).import_path(sample)
    assert report.outcome == repro_results.REFUSED
    # a refusal of the case document is a problem of the file's ``case``; its message
    # names the case and the path in its document
    (problem,) = report.problems
    assert (problem.code, problem.path) == ("affected.component_withdrawn", "case")
    assert problem.message.startswith(f"case {CASE} affected[2].component: ")
    assert ReproductionRun.objects.count() == before


def test_the_web_form_shows_each_refusal_at_its_field(seeded, analyst):
    client = signed_in(analyst)
    url = f"/cases/{CASE}/affected/edit/"
    before = state()
    response = submit(
        client,
        url,
        {
            "affected-3-component": "CMP-SGLANG",
            "affected-3-status": "fixed",
            "affected-3-ranges": "introduced 0.6, fixed 0.5.3",
            "affected-3-versions": "0.5.2, not-a-version!",
            "summary": "SGLang",
        },
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert "is not after the event before it" in text_of(field_block(html, "affected-3-ranges"))
    assert "is not a version of the pypi scheme" in text_of(
        field_block(html, "affected-3-versions")
    )
    assert "needs at least one supported claim" in text_of(field_block(html, "affected-3-claims"))
    assert state() == before
    # an unknown component is refused at its picker, naming the nearest keys
    response = submit(
        client,
        url,
        {"affected-3-component": "CMP-MOONCAK", "affected-3-status": "affected", "summary": "x"},
    )
    assert "CMP-MOONCAKE" in text_of(field_block(response.content.decode(), "affected-3-component"))
    assert state() == before


def test_the_web_form_writes_an_entry(seeded, analyst):
    client = signed_in(analyst)
    response = submit(
        client,
        f"/cases/{CASE}/affected/edit/",
        {
            "affected-3-component": "CMP-SGLANG",
            "affected-3-status": "fixed",
            "affected-3-ranges": "introduced 0, fixed 0.5.3\nintroduced 0.6.0, last_affected 0.6.2",
            "affected-3-versions": "0.5.2",
            "affected-3-claims": ["CLM-ENRICH-20261028-014"],
            "summary": "SGLang fixed",
        },
    )
    assert response.status_code == 302, response.content[:3000]
    assert record_document("case", CASE)["affected"][3] == {
        "component": "CMP-SGLANG",
        "status": "fixed",
        "ranges": [
            {"events": [{"introduced": "0"}, {"fixed": "0.5.3"}]},
            {"events": [{"introduced": "0.6.0"}, {"last_affected": "0.6.2"}]},
        ],
        "versions": ["0.5.2"],
        "claims": ["CLM-ENRICH-20261028-014"],
        "note": "",
    }
    page = text_of(client.get(f"/cases/{CASE}/").content.decode())
    assert "from the first version, fixed in 0.5.3" in page
    assert "from 0.6.0, up to and including 0.6.2" in page


def test_removing_every_entry_leaves_the_document_without_the_list(seeded, analyst):
    document = record_document("case", CASE)
    document["affected"] = []
    case_update(user=analyst, key=CASE, document=document, summary="None")
    assert "affected" not in record_document("case", CASE)
    assert not AffectedEntry.objects.exists()


def test_the_component_form_refuses_at_its_fields(seeded, analyst):
    client = signed_in(analyst)
    before = state()
    response = submit(
        client,
        "/components/new/",
        {
            "component-key": "CMP-TEST",
            "component-name": "Test",
            "component-kind": "library",
            "component-purl": "pkg:",
            "component-version_scheme": "pypi",
            "component-aliases": "t\nt",
            "component-relations": "CMP-NONE: maybe",
            "summary": "New",
        },
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert "is not a Package URL" in text_of(field_block(html, "component-purl"))
    assert "another alias already" in text_of(field_block(html, "component-aliases"))
    assert "there is no component CMP-NONE" in text_of(field_block(html, "component-relations"))
    assert state() == before
    response = submit(
        client,
        "/components/new/",
        {
            "component-key": "CMP-TEST",
            "component-name": "Test",
            "component-kind": "library",
            "component-purl": "pkg:pypi/test",
            "component-version_scheme": "pypi",
            "component-aliases": "t",
            "component-relations": "CMP-NIXL: the same, renamed",
            "summary": "New",
        },
    )
    assert response.status_code == 302
    assert record_document("component", "CMP-TEST")["relations"] == [
        {"component": "CMP-NIXL", "kind": "same_component", "note": "the same, renamed"}
    ]


# --- reads ------------------------------------------------------------------------------


def test_the_component_page_lists_the_cases_and_a_timeline_in_scheme_order(seeded, analyst):
    document = with_entry(
        ranges=[{"events": [{"introduced": "0.5.9"}, {"fixed": "0.5.10"}]}], versions=["0.4.1"]
    )
    case_update(user=analyst, key=CASE, document=document, summary="SGLang")
    page = text_of(signed_in(analyst).get("/components/CMP-SGLANG/").content.decode())
    assert "CP22-003" in page and "from 0.5.9, fixed in 0.5.10" in page
    timeline = page.split("Version timeline", 1)[1]
    assert timeline.index("0.4.1") < timeline.index("0.5.9") < timeline.index("0.5.10")
    nixl = text_of(signed_in(analyst).get("/components/CMP-NIXL/").content.decode())
    assert "CP22-003" in nixl and "No version stated." in nixl
    assert "No case states a version of this component." in nixl


def test_the_public_sees_the_released_components_and_cases(seeded, reviewer):
    from claimsdb.services.releases import release_publish

    release_publish(user=reviewer, notes="First")
    visitor = signed_in(None)
    page = text_of(visitor.get("/components/CMP-MOONCAKE/").content.decode())
    assert "CP22-003" in page
    listing = text_of(visitor.get("/components/").content.decode())
    assert all(name in listing for name in ("Mooncake", "NIXL", "MORI", "SGLang"))
    case_page = text_of(visitor.get(f"/cases/{CASE}/").content.decode())
    assert "Affected components" in case_page and "Mooncake" in case_page


@pytest.mark.parametrize("released", [False, True], ids=["working", "released"])
def test_the_case_lists_filter_by_component_and_status(seeded, analyst, reviewer, released):
    from claimsdb.services.releases import release_publish

    document = record_document("case", "CP22-002")
    document["affected"] = [entry("CMP-NIXL", status="under_investigation", claims=[])]
    case_update(user=analyst, key="CP22-002", document=document, summary="Looking")
    if released:
        document = record_document("case", "CP22-002")
        document["status"] = "ready"
        case_update(user=reviewer, key="CP22-002", document=document, summary="Ready")
        release_publish(user=reviewer, notes="Both")
    client = api_client(None if released else analyst)

    def keys(query: str) -> list[str]:
        response = client.get(f"/api/v1/cases/?{query}")
        assert response.status_code == 200, response.content
        return [item["key"] for item in body(response)["results"]]

    assert keys("component=CMP-NIXL") == ["CP22-002", CASE]
    assert keys("component=CMP-MOONCAKE") == [CASE]
    assert keys("component=CMP-NIXL&affected_status=affected") == [CASE]
    assert keys("component=CMP-NIXL&affected_status=under_investigation") == ["CP22-002"]
    assert keys("affected_status=under_investigation") == ["CP22-002"]
    assert keys("component=CMP-SGLANG") == []
    web = signed_in(None if released else analyst)
    listing = text_of(
        web.get("/cases/?component=CMP-NIXL&affected_status=affected").content.decode()
    )
    assert CASE in listing and "CP22-002" not in listing


def test_the_component_api_lists_and_searches_names_and_aliases(seeded, analyst):
    client = api_client(analyst)
    listed = body(client.get("/api/v1/components/?q=mooncake"))
    assert [item["key"] for item in listed["results"]] == ["CMP-MOONCAKE"]
    listed = body(client.get("/api/v1/components/?kind=transfer_backend"))
    assert [item["key"] for item in listed["results"]] == BACKENDS[:1] + ["CMP-MORI", "CMP-NIXL"]


def test_history_and_revert_of_a_component(seeded, analyst, reviewer):
    from claimsdb.services import revision_revert

    first = record_document("component", "CMP-MORI")
    changed = copy.deepcopy(first)
    changed["homepage"] = "https://example.org/mori"
    outcome = component_update(user=analyst, key="CMP-MORI", document=changed, summary="Home")
    client = signed_in(reviewer)
    history = client.get("/components/CMP-MORI/history/")
    assert history.status_code == 200
    earlier, now = component_history_numbers("CMP-MORI")[-2:]
    assert now == outcome.revision.number
    diff = text_of(client.get(f"/components/CMP-MORI/diff/{earlier}/{now}/").content.decode())
    assert "example.org/mori" in diff
    revision_revert(user=reviewer, number=earlier, summary="Back")
    assert record_document("component", "CMP-MORI") == first


def component_history_numbers(key: str) -> list[int]:
    from .support import revision_numbers

    return revision_numbers("component", key)


# --- costs ------------------------------------------------------------------------------


def case_naming(user, key: str, entries: int, ranges: int) -> None:
    """A new case with a supported claim and ``entries`` affected entries (the seed's
    components, then new ones), each of ``ranges`` ranges and as many explicit versions."""
    from .support import new_case, numbered_claim

    claim = numbered_claim(key, 0, 1)
    keys = ["CMP-SGLANG", "CMP-MOONCAKE", "CMP-NIXL", "CMP-MORI"]
    for n in range(len(keys), entries):
        extra = f"CMP-EXTRA-{n}"
        if not Component.objects.filter(key=extra).exists():
            component_create(user=user, document=component(extra), summary="More")
        keys.append(extra)
    affected = []
    for component_key in keys[:entries]:
        scheme = "pypi" if component_key in ("CMP-SGLANG",) or "EXTRA" in component_key else None
        step = (lambda i: f"{i}.0.0") if scheme is None else (lambda i: f"0.{i}")
        affected.append(
            entry(
                component_key,
                claims=[claim["id"]],
                ranges=[
                    {"events": [{"introduced": step(2 * i + 1)}, {"fixed": step(2 * i + 2)}]}
                    for i in range(ranges)
                ],
                versions=[step(2 * i + 1) for i in range(ranges)],
            )
        )
    from claimsdb.services import case_create

    case_create(
        user=user, document=new_case(key, claims=[claim], affected=affected), summary="Counting"
    )


def test_case_and_component_pages_cost_the_same_however_many_ranges_and_cases(
    seeded, reviewer, viewer
):
    from .support import get_queries

    case_naming(reviewer, "FEW-1", entries=1, ranges=1)
    case_naming(reviewer, "MANY-1", entries=6, ranges=12)
    client = signed_in(viewer)
    client.get("/")
    small, big = get_queries(client, "/cases/FEW-1/"), get_queries(client, "/cases/MANY-1/")
    assert small == big, (small, big)
    assert get_queries(client, "/api/v1/cases/FEW-1/") == get_queries(
        client, "/api/v1/cases/MANY-1/"
    )
    # a component named by one case, then by more cases than a page shows
    few = get_queries(client, "/components/CMP-SGLANG/")
    for n in range(30):
        case_naming(reviewer, f"MORE-{n}", entries=1, ranges=1 + n % 4)
    many = get_queries(client, "/components/CMP-SGLANG/")
    assert few == many, (few, many)
    assert get_queries(client, "/components/CMP-SGLANG/?page=2") == many
    assert many <= 20
    print(f"case page: {small} queries; component page: {many} queries")


def test_search_finds_components_by_name_alias_and_package_url(seeded, analyst, reviewer):
    from claimsdb.search import search
    from claimsdb.services.releases import release_publish

    component_create(
        user=analyst,
        document=component("CMP-LMCACHE", name="LMCache", aliases=["lm-cache-engine"]),
        summary="New",
    )
    for query, key in (
        ("LMCache", "CMP-LMCACHE"),
        ("lm-cache-engine", "CMP-LMCACHE"),
        ("kvcache-ai", "CMP-MOONCAKE"),
    ):
        hits = search(query, released=False, kind="component")
        assert key in [hit.key for hit in hits.page], query
    assert search("LMCache", released=True).counts["component"] == 0
    release_publish(user=reviewer, notes="With components")
    assert [h.key for h in search("LMCache", released=True, kind="component").page] == [
        "CMP-LMCACHE"
    ]
    page = text_of(signed_in(None).get("/?q=nixl").content.decode())
    assert "component" in page and "NIXL" in page
