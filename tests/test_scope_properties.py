"""Property: any sequence of edits through the services, valid or not, leaves a knowledge
base that check_rules finds clean."""

from __future__ import annotations

import copy

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from claimsdb.integrity import check_rules, verify_history
from claimsdb.records import PermissionDenied, RuleViolations, record_document
from claimsdb.services import bundle_load, case_update, rule_update

from .support import load_seed_bundle

pytestmark = pytest.mark.django_db

CASES = ["CP22-002", "CP22-003", "CP22-004"]
FIGURES = ["FIG-CP22-002-RESPONSES", "FIG-CP22-004-LAB"]
RULE = "RULE-CP22-002-RESPONSES-NOT-CP22-003"
RELATION_KINDS = ["same_event", "related_distinct", "variant_of"]


def third_case() -> dict:
    return {
        "format": "claimsdb.case/1",
        "key": "CP22-004",
        "title": "A lab variant",
        "status": "draft",
        "summary": "",
        "scope_note": "",
        "account": "",
        "basis": "",
        "limits": "",
        "tags": [],
        "assessments": [],
        "controls": [],
        "unknowns": [],
        "claims": [
            {
                "id": "CLM-CP22-004-A",
                "statement": "A lab run saw stale reads.",
                "status": "unverified",
                "status_note": "",
                "basis": "lab_reproduction",
                "origin": "human",
                "evidence": [],
            }
        ],
        "figures": [
            {
                "id": "FIG-CP22-004-LAB",
                "value": 12,
                "unit": "stale reads",
                "measure": "stale_reads",
                "scope": "lab",
                "description": "",
                "claims": ["CLM-CP22-004-A"],
            }
        ],
        "attributions": [],
        "relations": [],
        "reproduction_runs": [],
    }


edits = st.one_of(
    st.tuples(
        st.just("attribute"),
        st.sampled_from(CASES),
        st.sampled_from(FIGURES),
        st.sampled_from(["impact_basis", "context"]),
    ),
    st.tuples(st.just("clear_attributions"), st.sampled_from(CASES)),
    st.tuples(
        st.just("relate"),
        st.sampled_from(CASES),
        st.sampled_from(CASES),
        st.sampled_from(RELATION_KINDS),
    ),
    st.tuples(st.just("unrelate"), st.sampled_from(CASES)),
    st.tuples(
        st.just("grade"),
        st.sampled_from(["CP22-002", "CP22-003"]),
        st.integers(min_value=0, max_value=4),
        st.lists(
            st.sampled_from(
                ["CLM-CP22-003-A", "CLM-CP22-003-B", "CLM-CP22-002-A", "CLM-CP22-004-A"]
            ),
            max_size=2,
            unique=True,
        ),
    ),
    st.tuples(st.just("figure_scope"), st.sampled_from(["production", "lab", "estimate"])),
    st.tuples(st.just("rule_status"), st.sampled_from(["active", "withdrawn"])),
)


def apply_edit(user, edit) -> None:
    kind = edit[0]
    if kind == "rule_status":
        rule = record_document("rule", RULE)
        rule["status"] = edit[1]
        rule_update(user=user, key=RULE, document=rule, summary="rule status")
        return
    if kind == "figure_scope":
        key, mutate = "CP22-002", lambda d: d["figures"][0].update(scope=edit[1])
    elif kind == "attribute":
        key = edit[1]
        mutate = lambda d: d["attributions"].append(  # noqa: E731
            {"figure": edit[2], "role": edit[3], "note": ""}
        )
    elif kind == "clear_attributions":
        key, mutate = edit[1], lambda d: d.update(attributions=[])
    elif kind == "relate":
        key = edit[1]
        mutate = lambda d: d["relations"].append(  # noqa: E731
            {"case": edit[2], "kind": edit[3], "note": ""}
        )
    elif kind == "unrelate":
        key, mutate = edit[1], lambda d: d.update(relations=[])
    else:
        key = edit[1]

        def mutate(d):
            if not d["assessments"]:
                d["assessments"] = copy.deepcopy(record_document("case", "CP22-003")["assessments"])
            d["assessments"][0].update(impact=edit[2], impact_ungraded_reason="")
            d["assessments"][0]["evidence_basis"]["claims"] = sorted(edit[3])

    document = record_document("case", key)
    mutate(document)
    case_update(user=user, key=key, document=document, summary=f"{kind}")


@pytest.mark.slow
@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(edits, min_size=1, max_size=8))
def test_no_sequence_of_edits_leaves_a_violation(reviewer, sequence):
    with transaction.atomic():
        bundle = load_seed_bundle()
        bundle["cases"].append(third_case())
        bundle_load(user=reviewer, bundle=bundle, summary="Seed")
        accepted = 0
        for edit in sequence:
            try:
                apply_edit(reviewer, edit)
                accepted += 1
            except (RuleViolations, PermissionDenied):
                pass
            assert check_rules() == [], (edit, check_rules())
        assert verify_history() == []
        transaction.set_rollback(True)
