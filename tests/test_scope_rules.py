"""Scope rules (docs/scope-rules.md): a table of accepted and refused changes for every rule code,
and the seed's scenarios through every write path."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from claimsdb.integrity import check_rules
from claimsdb.models import Attribution, Revision
from claimsdb.records import RuleViolations, bundle_document, record_document
from claimsdb.services import (
    bundle_load,
    bundle_load_file,
    case_create,
    case_update,
    revision_revert,
    rule_create,
    rule_update,
    rule_withdraw,
)

from .support import attribute, bundle_of, case_doc, new_case, relate, rule_document

pytestmark = pytest.mark.django_db

FIGURE = "FIG-CP22-002-RESPONSES"
RULE = "RULE-CP22-002-RESPONSES-NOT-CP22-003"
SUPPORTS = {"source": "SRC-SGLANG-KV-TRANSFER-SAFETY", "relation": "supports", "locator": "§2"}


def grade(document, impact=2, claims=None):
    assessment = document["assessments"][0]
    assessment["impact"] = impact
    assessment["impact_ungraded_reason"] = ""
    if claims is not None:
        assessment["evidence_basis"]["claims"] = sorted(claims)
    return document


def lab_figure(document, claim_id="CLM-CP22-003-B", scope="lab"):
    document["figures"].append(
        {
            "id": "FIG-CP22-003-LAB-MISMATCHES",
            "value": 37,
            "unit": "checksum mismatches",
            "measure": "stale_reads",
            "scope": scope,
            "description": "Stale reads seen in the two-H200 reproduction.",
            "claims": [claim_id],
        }
    )
    return document


def production_case(key="CP22-004", same_event_with=None):
    """A case of its own event with a production figure its claim supports."""
    claim_id = f"CLM-{key}-A"
    document = new_case(
        key,
        claims=[
            {
                "id": claim_id,
                "statement": "Forty responses were affected.",
                "status": "supported",
                "status_note": "",
                "basis": "reported_finding",
                "origin": "human",
                "evidence": [SUPPORTS],
            }
        ],
        figures=[
            {
                "id": f"FIG-{key}-RESPONSES",
                "value": 40,
                "unit": "responses",
                "measure": "affected_responses",
                "scope": "production",
                "description": "",
                "claims": [claim_id],
            }
        ],
    )
    if same_event_with:
        relate(document, same_event_with, "same_event")
    return document


@dataclass
class Case:
    """One row of the table: a change through the services, and the code it must give."""

    name: str
    change: Callable  # (seed bundle, user) -> None, calls one service
    refused_with: str | None  # None: accepted

    def __repr__(self) -> str:
        return self.name


def update(key, mutate):
    def change(seed, user):
        document = mutate(case_doc(seed, key))
        case_update(user=user, key=key, document=document, summary=f"edit {key}")

    return change


def load(*documents_factory):
    def change(seed, user):
        cases = [factory(seed) for factory in documents_factory]
        bundle_load(user=user, bundle=bundle_of(cases=cases), summary="bundle")

    return change


TABLE = [
    # scope.non_attribution
    Case(
        "attribute 155 responses to CP22-003 as impact basis",
        update("CP22-003", lambda d: attribute(d, "impact_basis")),
        "scope.non_attribution",
    ),
    Case(
        "attribute 155 responses to CP22-003 as context",
        update("CP22-003", lambda d: attribute(d, "context")),
        "scope.non_attribution",
    ),
    Case(
        "attribute the 155 responses to their own case",
        update("CP22-002", lambda d: attribute(d, "context")),
        None,
    ),
    # scope.cross_case_figure
    Case(
        "attribute a figure to an unrelated case",
        load(
            lambda s: production_case("CP22-004"),
            lambda s: attribute(new_case("CP22-005"), "context", "FIG-CP22-004-RESPONSES"),
        ),
        "scope.cross_case_figure",
    ),
    Case(
        "attribute a figure to a same_event case",
        load(
            lambda s: production_case("CP22-004"),
            lambda s: attribute(
                relate(new_case("CP22-005"), "CP22-004", "same_event"),
                "context",
                "FIG-CP22-004-RESPONSES",
            ),
        ),
        None,
    ),
    Case(
        "attribute a figure across a same_event chain",
        load(
            lambda s: production_case("CP22-004"),
            lambda s: relate(new_case("CP22-005"), "CP22-004", "same_event"),
            lambda s: attribute(
                relate(new_case("CP22-006"), "CP22-005", "same_event"),
                "context",
                "FIG-CP22-004-RESPONSES",
            ),
        ),
        None,
    ),
    # scope.lab_not_impact
    Case(
        "grade impact on a lab figure",
        update("CP22-003", lambda d: grade(lab_figure(d), 2, ["CLM-CP22-003-B"])),
        "scope.lab_not_impact",
    ),
    Case(
        "attribute a lab figure as impact basis",
        load(
            lambda s: {
                **production_case("CP22-004"),
                "figures": [{**production_case("CP22-004")["figures"][0], "scope": "lab"}],
            },
            lambda s: attribute(
                relate(new_case("CP22-005"), "CP22-004", "same_event"),
                "impact_basis",
                "FIG-CP22-004-RESPONSES",
            ),
        ),
        "scope.lab_not_impact",
    ),
    Case(
        "add a lab figure without grading impact", update("CP22-003", lambda d: lab_figure(d)), None
    ),
    # assessment.impact_basis
    Case(
        "grade CP22-003's impact with no figure at all",
        update("CP22-003", lambda d: grade(d, 3)),
        "assessment.impact_basis",
    ),
    Case(
        "grade CP22-003's impact on the 155 responses' claim",
        update("CP22-003", lambda d: grade(d, 3, ["CLM-CP22-002-A"])),
        "assessment.basis_foreign",
    ),
    Case(
        "grade CP22-003's impact through the forbidden attribution",
        update("CP22-003", lambda d: grade(attribute(d), 3)),
        "scope.non_attribution",
    ),
    Case(
        "grade impact on an estimate figure",
        update("CP22-003", lambda d: grade(lab_figure(d, scope="estimate"), 1, ["CLM-CP22-003-B"])),
        "assessment.impact_basis",
    ),
    Case(
        "grade impact on the case's own production figure",
        load(
            lambda s: {
                **production_case("CP22-004"),
                "assessments": [
                    {
                        **copy.deepcopy(case_doc(s, "CP22-003")["assessments"][0]),
                        "impact": 2,
                        "impact_ungraded_reason": "",
                        "evidence_basis": {"claims": ["CLM-CP22-004-A"], "sources": []},
                    }
                ],
            }
        ),
        None,
    ),
    Case(
        "grade impact on a same_event case's production figure",
        load(
            lambda s: {
                **production_case("CP22-004"),
                "figures": [
                    {
                        **production_case("CP22-004")["figures"][0],
                        "claims": ["CLM-CP22-004-A", "CLM-CP22-005-A"],
                    }
                ],
            },
            lambda s: {
                **production_case("CP22-005", same_event_with="CP22-004"),
                "figures": [],
                "assessments": [
                    {
                        **copy.deepcopy(case_doc(s, "CP22-003")["assessments"][0]),
                        "impact": 1,
                        "impact_ungraded_reason": "",
                        "evidence_basis": {"claims": ["CLM-CP22-005-A"], "sources": []},
                    }
                ],
            },
        ),
        None,
    ),
    # scope.relation_conflict
    Case(
        "relate CP22-002 and CP22-003 as same_event",
        update("CP22-003", lambda d: relate(d, "CP22-002", "same_event")),
        "scope.relation_conflict",
    ),
    Case(
        "add same_event beside related_distinct",
        update(
            "CP22-003",
            lambda d: (
                d["relations"].append({"case": "CP22-002", "kind": "same_event", "note": ""}) or d
            ),
        ),
        "scope.relation_conflict",
    ),
    Case(
        "bridge the rule through a third case",
        load(
            lambda s: relate(
                relate(new_case("CP22-009"), "CP22-002", "same_event"), "CP22-003", "same_event"
            )
        ),
        "scope.relation_conflict",
    ),
    Case(
        "relate CP22-003 to another case as variant_of",
        load(
            lambda s: production_case("CP22-004"),
            lambda s: relate(case_doc(s, "CP22-003"), "CP22-004", "variant_of"),
        ),
        None,
    ),
]


@pytest.mark.parametrize("row", TABLE, ids=repr)
def test_scope_table(seeded, reviewer, row):
    before = bundle_document()
    revisions = Revision.objects.count()
    if row.refused_with is None:
        row.change(seeded, reviewer)
        assert check_rules() == []
        return
    with pytest.raises(RuleViolations) as refused:
        row.change(seeded, reviewer)
    assert row.refused_with in refused.value.codes, refused.value.violations
    assert bundle_document() == before
    assert Revision.objects.count() == revisions


def test_every_scope_code_is_in_the_table():
    from claimsdb.codes import CODES

    scope_codes = {c for c in CODES if c.startswith("scope.") or c == "assessment.impact_basis"}
    scope_codes.discard("scope.rule_conflict")  # covered by the rule-record tests below
    refused = {row.refused_with for row in TABLE}
    assert scope_codes <= refused


def test_refusal_message_names_rule_figure_case_and_path(seeded, analyst):
    document = attribute(case_doc(seeded, "CP22-003"), "impact_basis")
    with pytest.raises(RuleViolations) as refused:
        case_update(user=analyst, key="CP22-003", document=document, summary="x")
    (violation,) = refused.value.violations
    assert violation.code == "scope.non_attribution"
    assert violation.path == "attributions[0].figure"
    assert violation.record == ""
    for needle in (
        RULE,
        FIGURE,
        "155 responses",
        "production",
        "CP22-002",
        "CP22-003",
        "belong to the GLM-5.3 production rejection-path incident",
    ):
        assert needle in violation.message


# --- scope rules are records with their own history --------------------------------------


rule_doc = functools.partial(
    rule_document,
    key="RULE-CP22-004-NOT-CP22-003",
    figure="FIG-CP22-004-RESPONSES",
    case="CP22-003",
    reason="The forty responses belong to CP22-004.",
)


def test_only_reviewers_manage_rules(seeded, analyst, reviewer):
    from claimsdb.records import PermissionDenied

    bundle_load(user=reviewer, bundle=bundle_of(cases=[production_case()]), summary="x")
    with pytest.raises(PermissionDenied):
        rule_create(user=analyst, document=rule_doc(), summary="x")
    outcome = rule_create(user=reviewer, document=rule_doc(), summary="New rule")
    assert outcome.revision.record_kind == "rule"


def test_rule_that_existing_data_breaks_is_refused_listing_offenders(seeded, reviewer):
    attributing = attribute(
        relate(new_case("CP22-005"), "CP22-004", "same_event"), "context", "FIG-CP22-004-RESPONSES"
    )
    bundle_load(
        user=reviewer,
        bundle=bundle_of(cases=[production_case(), attributing]),
        summary="Two cases of one event",
    )
    before, revisions = bundle_document(), Revision.objects.count()
    with pytest.raises(RuleViolations) as refused:
        rule_create(user=reviewer, summary="x", document=rule_doc(case="CP22-005"))
    violations = refused.value.violations
    assert {v.code for v in violations} == {"scope.rule_conflict"}
    assert ("case CP22-005", "attributions[0].figure") in {(v.record, v.path) for v in violations}
    assert bundle_document() == before and Revision.objects.count() == revisions


def test_rule_forbidding_a_figure_for_its_own_case_is_refused(seeded, reviewer):
    with pytest.raises(RuleViolations) as refused:
        rule_create(
            user=reviewer,
            summary="x",
            document=rule_doc(figure=FIGURE, case="CP22-002", key="RULE-SELF"),
        )
    assert refused.value.codes == ["scope.rule_conflict"]


def test_rule_naming_unknown_records_is_refused(seeded, reviewer):
    with pytest.raises(RuleViolations) as refused:
        rule_create(
            user=reviewer, summary="x", document=rule_doc(figure="FIG-NOPE", case="CP00-000")
        )
    assert set(refused.value.codes) == {"rule.figure_unknown", "rule.case_unknown"}


def test_withdrawn_rule_stops_blocking_and_reactivation_is_checked(seeded, analyst, reviewer):
    rule_withdraw(user=reviewer, key=RULE, summary="Withdraw for the test")
    # still a cross-case figure: CP22-002 and CP22-003 are related but distinct
    with pytest.raises(RuleViolations) as refused:
        case_update(
            user=analyst,
            key="CP22-003",
            summary="x",
            document=attribute(case_doc(seeded, "CP22-003"), "context"),
        )
    assert refused.value.codes == ["scope.cross_case_figure"]
    # once the two are one event and the rule is withdrawn, the attribution is accepted
    two = copy.deepcopy(seeded)
    cp3 = attribute(relate(case_doc(two, "CP22-003"), "CP22-002", "same_event"), "context")
    cp2 = relate(case_doc(two, "CP22-002"), "CP22-003", "same_event")
    bundle_load(user=reviewer, bundle=bundle_of(cases=[cp2, cp3]), summary="Merge events")
    assert Attribution.objects.filter(figure_id=FIGURE, case__key="CP22-003").exists()
    # reactivating the rule over that data is refused with every offender listed
    rule = record_document("rule", RULE)
    rule["status"] = "active"
    with pytest.raises(RuleViolations) as refused:
        rule_update(user=reviewer, key=RULE, document=rule, summary="Reactivate")
    offenders = {(v.code, v.record, v.path) for v in refused.value.violations}
    assert ("scope.rule_conflict", "case CP22-003", "attributions[0].figure") in offenders
    assert any(v.record == "case CP22-002" for v in refused.value.violations)


def test_creating_a_case_with_the_forbidden_attribution_in_a_bundle_is_refused(seeded, reviewer):
    bundle = copy.deepcopy(seeded)
    attribute(next(c for c in bundle["cases"] if c["key"] == "CP22-003"), "context")
    before = bundle_document()
    with pytest.raises(RuleViolations) as refused:
        bundle_load(user=reviewer, bundle=bundle, summary="x")
    assert [(v.code, v.path) for v in refused.value.violations] == [
        ("scope.non_attribution", "cases[1].attributions[0].figure")
    ]
    assert bundle_document() == before


# --- every write path ----------------------------------------------------------------------


def test_load_records_refuses_the_forbidden_attribution(seeded, reviewer, tmp_path, capsys):
    bundle = copy.deepcopy(seeded)
    attribute(next(c for c in bundle["cases"] if c["key"] == "CP22-003"), "impact_basis")
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bundle), encoding="utf-8")
    revisions = Revision.objects.count()
    with pytest.raises(CommandError):
        call_command("load_records", str(path), user="reviewer")
    err = capsys.readouterr().err
    assert "cases[1].attributions[0].figure: scope.non_attribution" in err
    assert Revision.objects.count() == revisions


def test_revert_to_a_revision_todays_rules_forbid(seeded, reviewer):
    rule_withdraw(user=reviewer, key=RULE, summary="Withdraw")
    cp3 = attribute(relate(case_doc(seeded, "CP22-003"), "CP22-002", "same_event"), "context")
    cp2 = relate(case_doc(seeded, "CP22-002"), "CP22-003", "same_event")
    bundle_load(user=reviewer, bundle=bundle_of(cases=[cp2, cp3]), summary="Merge events")
    merged = Revision.objects.filter(record_key="CP22-003").latest("number").number
    bundle_load(
        user=reviewer,
        bundle=bundle_of(cases=[case_doc(seeded, "CP22-002"), case_doc(seeded, "CP22-003")]),
        summary="Split again",
    )
    rule = record_document("rule", RULE)
    rule["status"] = "active"
    rule_update(user=reviewer, key=RULE, document=rule, summary="Reactivate")
    before, revisions = bundle_document(), Revision.objects.count()
    with pytest.raises(RuleViolations) as refused:
        revision_revert(user=reviewer, number=merged, summary="Back to merged")
    assert "scope.non_attribution" in refused.value.codes
    assert bundle_document() == before and Revision.objects.count() == revisions


# --- check_rules -----------------------------------------------------------------------------


def test_check_rules_is_clean_on_the_seed(seeded, capsys):
    call_command("check_rules")
    assert "no rule violations" in capsys.readouterr().out


def test_check_rules_finds_a_violation_written_behind_the_services(seeded, capsys):
    from claimsdb.models import Case as CaseRow
    from claimsdb.models import Figure

    Attribution.objects.create(
        case=CaseRow.objects.get(key="CP22-003"),
        position=0,
        figure=Figure.objects.get(figure_id=FIGURE),
        role="impact_basis",
        note="",
    )
    with pytest.raises(CommandError):
        call_command("check_rules")
    err = capsys.readouterr().err
    assert "case CP22-003: attributions[0].figure: scope.non_attribution" in err


def test_check_rules_finds_field_rule_violations_behind_the_services(seeded):
    from claimsdb.models import EvidenceLink

    EvidenceLink.objects.filter(claim__claim_id="CLM-CP22-003-A").delete()
    found = {(v.record, v.code, v.path) for v in check_rules()}
    assert ("case CP22-003", "claim.evidence_required", "claims[0].evidence") in found


def test_a_write_elsewhere_is_not_blocked_by_old_problems(seeded, analyst):
    from claimsdb.models import Case as CaseRow
    from claimsdb.models import Figure

    Attribution.objects.create(
        case=CaseRow.objects.get(key="CP22-003"),
        position=0,
        figure=Figure.objects.get(figure_id=FIGURE),
        role="context",
        note="",
    )
    case_create(user=analyst, document=new_case("CP22-010"), summary="Unrelated case")


def test_scope_selector_lists_what_bounds_a_case(seeded):
    from claimsdb.selectors.scope import case_scope

    scope = case_scope("CP22-003")
    (rule,) = scope["forbidden_here"]
    assert (rule["figure"], rule["figure_value"], rule["figure_case"]) == (FIGURE, 155, "CP22-002")
    assert scope["relations"] == [
        {
            "case": "CP22-002",
            "kind": "related_distinct",
            "note": case_doc(seeded, "CP22-003")["relations"][0]["note"],
        }
    ]
    assert case_scope("CP22-002")["protecting_own"][0]["case"] == "CP22-003"


# --- a bundle is one change ------------------------------------------------------------------


def merged_with_rule_withdrawn(seeded) -> dict:
    """The seed bundle as one consistent change: the rule withdrawn, CP22-002 and CP22-003
    one event, and CP22-003 attributing CP22-002's figure."""
    bundle = copy.deepcopy(seeded)
    cases = {c["key"]: c for c in bundle["cases"]}
    attribute(relate(cases["CP22-003"], "CP22-002", "same_event"), "context")
    relate(cases["CP22-002"], "CP22-003", "same_event")
    (rule,) = [r for r in bundle["rules"] if r["key"] == RULE]
    rule["status"] = "withdrawn"
    return bundle


@pytest.mark.parametrize("batch_size", [1, 500])
def test_a_consistent_bundle_is_checked_against_its_own_end_state(
    seeded, reviewer, tmp_path, batch_size
):
    path = tmp_path / "merged.json"
    path.write_text(json.dumps(merged_with_rule_withdrawn(seeded)), encoding="utf-8")
    bundle_load_file(user=reviewer, path=path, summary="Merge events", batch_size=batch_size)
    assert Attribution.objects.filter(figure_id=FIGURE, case__key="CP22-003").exists()
    assert record_document("rule", RULE)["status"] == "withdrawn"
    call_command("check_rules")


def test_load_records_loads_a_consistent_bundle_the_api_accepts_in_two_steps(
    seeded, reviewer, tmp_path, capsys
):
    path = tmp_path / "merged.json"
    path.write_text(json.dumps(merged_with_rule_withdrawn(seeded)), encoding="utf-8")
    call_command("load_records", str(path), user="reviewer", summary="Merge events")
    assert record_document("case", "CP22-003")["attributions"][0]["figure"] == FIGURE


def test_a_bundle_that_breaks_a_rule_it_keeps_active_is_still_refused(seeded, reviewer, tmp_path):
    bundle = merged_with_rule_withdrawn(seeded)
    next(r for r in bundle["rules"] if r["key"] == RULE)["status"] = "active"
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(bundle), encoding="utf-8")
    before, revisions = bundle_document(), Revision.objects.count()
    with pytest.raises(RuleViolations) as refused:
        bundle_load_file(user=reviewer, path=path, summary="x", batch_size=1)
    assert "scope.non_attribution" in refused.value.codes
    assert bundle_document() == before and Revision.objects.count() == revisions


def test_an_impact_refusal_names_the_claims_that_would_qualify(seeded, analyst):
    from claimsdb.records import RuleViolations, record_document
    from claimsdb.services import case_update

    document = record_document("case", "CP22-003")
    lab_figure(document, claim_id="CLM-CP22-003-A", scope="production")
    case_update(user=analyst, key="CP22-003", document=document, summary="A figure")
    document = grade(record_document("case", "CP22-003"), 3, ["CLM-CP22-003-B"])
    with pytest.raises(RuleViolations) as refused:
        case_update(user=analyst, key="CP22-003", document=document, summary="Grade")
    (violation,) = [v for v in refused.value.violations if v.code == "assessment.impact_basis"]
    assert "add such a claim to the evidence basis: CLM-CP22-003-A (supporting" in (
        violation.message
    )
    assert "FIG-CP22-003-LAB-MISMATCHES (37 checksum mismatches, production" in violation.message


def test_an_impact_refusal_says_when_no_claim_would_qualify(seeded, analyst):
    from claimsdb.records import RuleViolations, record_document
    from claimsdb.services import case_update

    document = grade(record_document("case", "CP22-003"), 3)
    with pytest.raises(RuleViolations) as refused:
        case_update(user=analyst, key="CP22-003", document=document, summary="Grade")
    (violation,) = [v for v in refused.value.violations if v.code == "assessment.impact_basis"]
    assert "no claim supports a production figure attributable to CP22-003 yet" in (
        violation.message
    )
