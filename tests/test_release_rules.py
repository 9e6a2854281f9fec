"""The released state passes every rule as a whole (docs/review.md, "The release as a
whole"): approved revisions of different records that disagree are refused together."""

from __future__ import annotations

import json

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from claimsdb.choices import SYMMETRIC_RELATIONS
from claimsdb.models import Release, ReleaseEntry
from claimsdb.records import PermissionDenied, RuleViolations, record_document
from claimsdb.rules import ScopeState, run_scope_rules
from claimsdb.rules.state import FigureFact, RuleFact
from claimsdb.services import bundle_load, case_update, record_create, rule_update
from claimsdb.services.approvals import approve
from claimsdb.services.releases import release_plan, release_publish

from .support import (
    FORBIDDEN_FIGURE,
    approve_all,
    approver,
    latest,
    load_seed_bundle,
    make_user,
    new_case,
    rule_document,
)

pytestmark = pytest.mark.django_db

CASE = "CP99-001"
OWNER = "CP22-002"  # owns FORBIDDEN_FIGURE
BARRING_RULE = "RULE-CP22-002-RESPONSES-NOT-CP99-001"


def released_scope_violations(release: Release) -> list:
    """The scope rules over every case and rule document ``release`` publishes, read from
    scratch: the oracle the property compares with (nothing of ``release_rules``)."""
    state = ScopeState()
    relations = set()
    rules = []
    for entry in ReleaseEntry.objects.filter(release=release).select_related("revision"):
        document = json.loads(entry.revision.snapshot)
        if entry.record_kind == "rule" and document["status"] == "active":
            rules.append(
                RuleFact(entry.record_key, document["figure"], document["case"], document["reason"])
            )
        if entry.record_kind != "case":
            continue
        key = entry.record_key
        for figure in document["figures"]:
            state.figures[figure["id"]] = FigureFact(
                figure["id"],
                key,
                figure["value"],
                figure["unit"],
                figure["scope"],
                frozenset(figure["claims"]),
            )
        for position, attribution in enumerate(document["attributions"]):
            state.attributions.append((key, position, attribution["figure"], attribution["role"]))
        for relation in document["relations"]:
            case, other = key, relation["case"]
            if relation["kind"] in SYMMETRIC_RELATIONS and other < key:
                case, other = other, case
            relations.add((case, other, relation["kind"]))
        for position, assessment in enumerate(document["assessments"]):
            state.assessments.append(
                (
                    key,
                    position,
                    assessment["impact"],
                    frozenset(assessment["evidence_basis"]["claims"]),
                )
            )
    state.relations = sorted(relations)
    state.rules = sorted(rules, key=lambda rule: rule.key)
    state._build_indexes()
    return run_scope_rules(state)


def attributing_case() -> dict:
    """CP99-001, ready, one event with CP22-002 and attributing its production figure."""
    document = new_case(CASE, status="ready")
    document["relations"] = [{"case": OWNER, "kind": "same_event", "note": ""}]
    document["attributions"] = [{"figure": FORBIDDEN_FIGURE, "role": "context", "note": ""}]
    return document


def test_the_issues_example_is_refused_and_names_the_approval_that_resolves_it(
    seeded, reviewer, analyst
):
    """A case approved while it attributed figure F; the attribution removed in a later,
    unapproved revision; then a rule barring F from the case created and approved.
    Publishing the approved case with the approved rule would put a forbidden attribution
    on the public record: the preview says so and publishing is refused."""
    record_create(user=reviewer, kind="case", document=attributing_case(), summary="New case")
    approve_all()  # the case, and CP22-002 whose document gained the relation
    approved = latest("case", CASE)
    # later, unapproved: the attribution (and the relation it rests on) go
    document = record_document("case", CASE)
    document["attributions"] = []
    document["relations"] = []
    case_update(user=reviewer, key=CASE, document=document, summary="Not F after all")
    rule = rule_document(BARRING_RULE, case=CASE, figure=FORBIDDEN_FIGURE)
    record_create(user=reviewer, kind="rule", document=rule, summary="F is not CP99-001's")
    approve(
        user=approver(),
        record_kind="rule",
        record_key=BARRING_RULE,
        revision_number=latest("rule", BARRING_RULE),
    )

    plan = release_plan()
    codes = [violation.code for violation in plan.conflicts]
    assert codes[0] == "approval.conflict"
    assert "scope.non_attribution" in codes
    forbidden = next(v for v in plan.conflicts if v.code == "scope.non_attribution")
    assert forbidden.record == f"case {CASE}"
    assert f"case {CASE} at revision {approved}" in forbidden.message
    assert f"approving case {CASE} at its latest revision {latest('case', CASE)}" in (
        forbidden.message
    )

    releases = Release.objects.count()
    with pytest.raises(RuleViolations) as refused:
        release_publish(user=reviewer, notes="Would publish a forbidden attribution")
    assert "scope.non_attribution" in refused.value.codes
    assert Release.objects.count() == releases  # nothing written

    # the approval the message names resolves it
    approve_all()
    assert release_plan().conflicts == []
    release = release_publish(user=reviewer, notes="Consistent")
    assert released_scope_violations(release) == []
    entry = ReleaseEntry.objects.get(release=release, record_key=CASE)
    assert json.loads(entry.revision.snapshot)["attributions"] == []


def test_a_consistent_release_is_not_refused(seeded, reviewer, analyst):
    record_create(user=reviewer, kind="case", document=attributing_case(), summary="New case")
    approve_all()
    document = record_document("case", CASE)
    document["title"] = "A retitled case, awaiting review"
    case_update(user=analyst, key=CASE, document=document, summary="Retitled")
    plan = release_plan()
    assert plan.conflicts == [] and plan.awaiting_count == 1
    release = release_publish(user=reviewer, notes="1")
    assert released_scope_violations(release) == []


# --- the property ---------------------------------------------------------------------------

CASES = ["CP22-003", CASE]
RULE = "RULE-CP22-002-RESPONSES-NOT-CP22-003"

# Edits that attach a case to CP22-002's event and attribute its figure, or detach it, so
# that approved revisions of the cases and the rules barring the figure disagree often.
operations = st.one_of(
    st.tuples(st.just("attach"), st.sampled_from(CASES)),
    st.tuples(st.just("detach"), st.sampled_from(CASES)),
    st.tuples(st.just("distinct"), st.sampled_from(CASES)),
    st.tuples(
        st.just("rule"),
        st.sampled_from([RULE, BARRING_RULE]),
        st.sampled_from(["active", "withdrawn"]),
    ),
    st.tuples(st.just("approve"), st.sampled_from([*CASES, OWNER, RULE, BARRING_RULE])),
    st.tuples(st.just("publish")),
)


def apply_operation(author, operation) -> Release | None:
    """Apply one operation; the release it published, if it was a publication."""
    name = operation[0]
    if name == "publish":
        try:
            return release_publish(user=author, notes="A release")
        except RuleViolations as refused:
            assert (
                set(refused.codes)
                <= {
                    "release.nothing_changed",
                    "approval.conflict",
                    "scope.non_attribution",
                    "scope.cross_case_figure",
                    "scope.relation_conflict",
                    "scope.lab_not_impact",
                }
                or "approval.conflict" in refused.codes
            ), refused.codes
            return None
    if name == "approve":
        key = operation[1]
        kind = "rule" if key.startswith("RULE-") else "case"
        if record_document(kind, key) is None:
            return None
        try:
            approve(
                user=approver(),
                record_kind=kind,
                record_key=key,
                revision_number=latest(kind, key),
            )
        except RuleViolations:
            pass  # approved already
        return None
    if name == "rule":
        key, status = operation[1], operation[2]
        document = record_document("rule", key)
        if document is None:
            document = rule_document(key, case=CASE, figure=FORBIDDEN_FIGURE)
            document["status"] = status
            record_create(user=author, kind="rule", document=document, summary="rule")
        else:
            document["status"] = status
            rule_update(user=author, key=key, document=document, summary="rule status")
        return None
    key = operation[1]
    document = record_document("case", key)
    others = [r for r in document["relations"] if r["case"] != OWNER]
    if name == "attach":
        document["relations"] = [*others, {"case": OWNER, "kind": "same_event", "note": ""}]
        document["attributions"] = [{"figure": FORBIDDEN_FIGURE, "role": "context", "note": ""}]
    elif name == "distinct":
        document["relations"] = [*others, {"case": OWNER, "kind": "related_distinct", "note": ""}]
        document["attributions"] = []
    else:
        document["relations"] = others
        document["attributions"] = []
    case_update(user=author, key=key, document=document, summary=name)
    return None


@pytest.mark.slow
@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(operations, min_size=3, max_size=10))
def test_no_published_release_holds_a_violation(reviewer, sequence):
    """On any sequence of edits, rules, approvals and publications, every release
    published passes the scope rules over the documents it publishes."""
    with transaction.atomic():
        bundle = load_seed_bundle()
        bundle_load(user=reviewer, bundle=bundle, summary="Seed")
        record_create(user=reviewer, kind="case", document=attributing_case(), summary="New")
        approve_all()
        author = make_user("author", "reviewer")
        # approved attached; detached since, awaiting review
        apply_operation(author, ("detach", CASE))
        for operation in sequence:
            try:
                release = apply_operation(author, operation)
            except (RuleViolations, PermissionDenied):
                continue  # a write the rules refused
            if release is not None:
                assert released_scope_violations(release) == [], operation
        transaction.set_rollback(True)
