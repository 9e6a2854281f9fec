"""The one write path: field rules, outcomes, revisions, permissions."""

import copy

import pytest

from claimsdb.models import Case, Claim, Revision
from claimsdb.records import (
    PermissionDenied,
    RecordExists,
    RuleViolations,
    StaleRevision,
    bundle_document,
    record_document,
)
from claimsdb.services import (
    ANY_REVISION,
    case_create,
    case_update,
    case_withdraw,
    claim_add,
    claim_update,
    claim_withdraw,
    method_update,
    source_update,
)

from .support import case_doc, new_case

pytestmark = pytest.mark.django_db


def codes_paths(exc) -> set[tuple[str, str]]:
    return {(v.code, v.path) for v in exc.violations}


def assert_refused(callable_, expected: set[tuple[str, str]]):
    before_revisions = Revision.objects.count()
    before = bundle_document()
    with pytest.raises(RuleViolations) as refused:
        callable_()
    assert codes_paths(refused.value) >= expected, refused.value.violations
    assert Revision.objects.count() == before_revisions
    assert bundle_document() == before
    return refused.value


def claim(claim_id, status="unverified", evidence=()):
    return {
        "id": claim_id,
        "statement": f"Statement of {claim_id}.",
        "status": status,
        "status_note": "",
        "basis": "reported_finding",
        "origin": "human",
        "evidence": list(evidence),
    }


SUPPORTS = {"source": "SRC-SGLANG-KV-TRANSFER-SAFETY", "relation": "supports", "locator": "§1"}


def test_create_update_withdraw_write_one_revision_each(seeded, analyst):
    created = case_create(user=analyst, document=new_case(), summary="New case")
    assert created.outcome == "created" and created.revision.action == "create"
    document = new_case(title="Renamed")
    updated = case_update(user=analyst, key="CP99-001", document=document, summary="Rename")
    assert updated.outcome == "updated" and updated.revision.number == created.revision.number + 1
    withdrawn = case_withdraw(user=analyst, key="CP99-001", summary="Out of scope")
    assert withdrawn.revision.action == "withdraw"
    assert Case.objects.get(key="CP99-001").status == "withdrawn"


def test_a_save_that_changes_nothing_writes_no_revision(seeded, analyst):
    document = case_doc(seeded, "CP22-003")
    before = Revision.objects.count()
    outcome = case_update(user=analyst, key="CP22-003", document=document, summary="No-op")
    assert outcome.outcome == "unchanged" and outcome.revision is None
    assert Revision.objects.count() == before


def test_material_and_editorial_saves_are_told_apart(seeded, analyst):
    document = case_doc(seeded, "CP22-003")
    document["summary"] += " "
    editorial = case_update(
        user=analyst, key="CP22-003", document=document, summary="Typo", material=False
    )
    document["status"] = "in_review"
    material = case_update(user=analyst, key="CP22-003", document=document, summary="Review")
    assert editorial.revision.material is False
    assert material.revision.material is True


def test_summary_is_required(seeded, analyst):
    document = case_doc(seeded, "CP22-003")
    document["title"] = "x"
    assert_refused(
        lambda: case_update(user=analyst, key="CP22-003", document=document, summary="  "),
        {("revision.summary_required", "summary")},
    )


def test_create_existing_key_is_a_conflict(seeded, analyst):
    with pytest.raises(RecordExists):
        case_create(user=analyst, document=case_doc(seeded, "CP22-003"), summary="again")


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (
            lambda d: d["claims"].append(claim("CLM-CP22-002-A")),
            {("claim.id_taken", "claims[3].id")},
        ),
        (
            lambda d: d["claims"].append(claim("CLM-CP22-003-A")),
            {("claim.id_duplicate", "claims[3].id")},
        ),
        (
            lambda d: d["claims"][0].update(evidence=[]),
            {("claim.evidence_required", "claims[0].evidence")},
        ),
        (
            lambda d: d["claims"][0].update(status="refuted"),
            {("claim.evidence_required", "claims[0].evidence")},
        ),
        (
            lambda d: d["claims"][0]["evidence"][0].update(source="SRC-NOPE"),
            {("evidence.source_unknown", "claims[0].evidence[0].source")},
        ),
        (
            lambda d: d["assessments"][0].update(method="other.method/1"),
            {("assessment.method_unknown", "assessments[0].method")},
        ),
        (
            lambda d: d["assessments"][0]["values"].pop("exploitation"),
            {("assessment.value_missing", "assessments[0].values.exploitation")},
        ),
        (
            lambda d: d["assessments"][0]["values"].update(evidence_grade="Z"),
            {("assessment.value_unknown", "assessments[0].values.evidence_grade")},
        ),
        (
            lambda d: d["assessments"][0]["values"].update(novelty="high"),
            {("assessment.value_unknown", "assessments[0].values.novelty")},
        ),
        (
            lambda d: d["assessments"][0].update(impact_ungraded_reason=""),
            {("assessment.impact_reason", "assessments[0].impact_ungraded_reason")},
        ),
        (
            lambda d: d["assessments"][0].update(impact=2),
            {("assessment.impact_reason", "assessments[0].impact_ungraded_reason")},
        ),
        (
            lambda d: d["assessments"][0].update(impact=9, impact_ungraded_reason=""),
            {("assessment.impact_range", "assessments[0].impact")},
        ),
        (
            lambda d: d["assessments"][0]["evidence_basis"].update(claims=["CLM-CP22-002-A"]),
            {("assessment.basis_foreign", "assessments[0].evidence_basis.claims[0]")},
        ),
        (
            lambda d: d["assessments"][0]["evidence_basis"].update(sources=["SRC-NOPE"]),
            {("assessment.basis_foreign", "assessments[0].evidence_basis.sources[0]")},
        ),
        (
            lambda d: d["relations"].append({"case": "CP77-404", "kind": "variant_of", "note": ""}),
            {("relation.case_unknown", "relations[1].case")},
        ),
        (
            lambda d: d["attributions"].append(
                {"figure": "FIG-NOPE", "role": "context", "note": ""}
            ),
            {("attribution.figure_unknown", "attributions[0].figure")},
        ),
        (
            lambda d: d["reproduction_runs"].append({"run_id": "fake"}),
            {("case.reproduction_runs_readonly", "reproduction_runs")},
        ),
    ],
)
def test_field_rules_refuse_with_code_and_path(seeded, analyst, mutate, expected):
    document = case_doc(seeded, "CP22-003")
    mutate(document)
    assert_refused(
        lambda: case_update(user=analyst, key="CP22-003", document=document, summary="edit"),
        expected,
    )


def test_claim_ids_are_never_reused_after_removal(seeded, analyst):
    document = case_doc(seeded, "CP22-003")
    removed = document["claims"].pop(2)
    document["assessments"][0]["evidence_basis"]["claims"].remove(removed["id"])
    case_update(user=analyst, key="CP22-003", document=document, summary="Drop a claim")
    assert not Claim.objects.filter(claim_id=removed["id"]).exists()
    document["claims"].append({**removed, "statement": "Another statement"})
    assert_refused(
        lambda: case_update(user=analyst, key="CP22-003", document=document, summary="Reuse"),
        {("claim.id_taken", "claims[2].id")},
    )
    other = new_case(claims=[claim(removed["id"])])
    assert_refused(
        lambda: case_create(user=analyst, document=other, summary="Reuse elsewhere"),
        {("claim.id_taken", "claims[0].id")},
    )


def test_withdrawn_claim_id_stays_taken(seeded, analyst):
    claim_withdraw(user=analyst, claim_id="CLM-CP22-003-A", summary="Withdraw")
    assert Claim.objects.get(claim_id="CLM-CP22-003-A").status == "withdrawn"
    assert_refused(
        lambda: case_create(
            user=analyst, document=new_case(claims=[claim("CLM-CP22-003-A")]), summary="x"
        ),
        {("claim.id_taken", "claims[0].id")},
    )


def test_claim_sub_services_each_write_one_case_revision(seeded, analyst):
    before = Revision.objects.count()
    claim_add(
        user=analyst,
        case_key="CP22-003",
        claim=claim("CLM-CP22-003-C", "supported", [SUPPORTS]),
        summary="Add C",
    )
    claim_update(
        user=analyst,
        claim_id="CLM-CP22-003-C",
        claim=claim("CLM-CP22-003-C", "partially_supported", [SUPPORTS]),
        summary="Soften C",
    )
    assert Revision.objects.count() == before + 2
    assert record_document("case", "CP22-003")["claims"][3]["status"] == "partially_supported"
    assert_refused(
        lambda: claim_update(
            user=analyst,
            claim_id="CLM-CP22-003-C",
            claim=claim("CLM-CP22-003-C", "supported"),
            summary="Break C",
        ),
        {("claim.evidence_required", "claims[3].evidence")},
    )


def test_stale_edit_is_refused(seeded, analyst):
    base = Revision.objects.filter(record_key="CP22-003").latest("number").number
    document = case_doc(seeded, "CP22-003")
    document["title"] = "First"
    case_update(
        user=analyst, key="CP22-003", document=document, summary="1", expected_revision=base
    )
    document["title"] = "Second"
    with pytest.raises(StaleRevision) as stale:
        case_update(
            user=analyst, key="CP22-003", document=document, summary="2", expected_revision=base
        )
    assert stale.value.codes == ["revision.stale"]
    assert record_document("case", "CP22-003")["title"] == "First"


@pytest.mark.parametrize("role_fixture", ["viewer", "nobody"])
def test_readers_cannot_write(seeded, request, role_fixture):
    user = request.getfixturevalue(role_fixture)
    document = case_doc(seeded, "CP22-003")
    document["title"] = "Vandalised"
    before = Revision.objects.count()
    with pytest.raises(PermissionDenied):
        case_update(user=user, key="CP22-003", document=document, summary="x")
    assert Revision.objects.count() == before
    assert record_document("case", "CP22-003")["title"] != "Vandalised"


def test_analysts_cannot_change_methods_or_rules(seeded, analyst):
    method = copy.deepcopy(seeded["methods"][0])
    method["title"] = "Changed"
    with pytest.raises(PermissionDenied):
        method_update(user=analyst, key=method["key"], document=method, summary="x")


def test_method_in_use_is_immutable(seeded, reviewer):
    method = copy.deepcopy(seeded["methods"][0])
    method["dimensions"][0]["values"].append({"key": "new_value", "label": "new"})
    assert_refused(
        lambda: method_update(user=reviewer, key=method["key"], document=method, summary="x"),
        {("method.in_use", "")},
    )


def test_sources_update(seeded, analyst):
    source = copy.deepcopy(seeded["sources"][0])
    source["notes"] = "Checked again."
    outcome = source_update(
        user=analyst,
        key=source["key"],
        document=source,
        summary="Note",
        expected_revision=ANY_REVISION,
    )
    assert outcome.outcome == "updated"
    assert outcome.document["notes"] == "Checked again."


def test_relations_show_on_both_cases_and_version_both(seeded, analyst):
    created = case_create(
        user=analyst,
        document=new_case(
            relations=[{"case": "CP22-003", "kind": "related_distinct", "note": "n"}]
        ),
        summary="Related",
    )
    other = record_document("case", "CP22-003")
    assert {"case": "CP99-001", "kind": "related_distinct", "note": "n"} in other["relations"]
    latest = Revision.objects.filter(record_key="CP22-003").latest("number")
    assert latest.number == created.revision.number + 1
    from claimsdb.integrity import verify_history

    assert verify_history() == []
