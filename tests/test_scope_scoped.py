"""The write path checks scope on the cases a change can affect; property: it refuses
exactly what a scan of the whole knowledge base refuses, and costs the same queries at any
size."""

from __future__ import annotations

import copy
import functools
import tracemalloc
from contextlib import contextmanager

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from claimsdb.integrity import batch_scope_violations, check_rules, scope_violations
from claimsdb.models import ScopeRule
from claimsdb.records import RuleViolation, RuleViolations, record_document
from claimsdb.rules import ScopeState, run_scope_rules
from claimsdb.rules.scope import bridge_hits, non_attribution_hits
from claimsdb.services import bundle_load, case_update, writer
from claimsdb.services.writer import RecordWrite, write_records

from . import support
from .support import bundle_of, load_seed_bundle, new_case, relate

pytestmark = pytest.mark.django_db

SEED = load_seed_bundle()
ASSESSMENT = next(c for c in SEED["cases"] if c["assessments"])["assessments"][0]
METHODS = [m for m in SEED["methods"] if m["key"] == ASSESSMENT["method"]]
SOURCES = [s for s in SEED["sources"] if s["key"] in ASSESSMENT["evidence_basis"]["sources"]]


# -- the reference: the whole-knowledge-base check the write path used to run ----------


def reference_baseline(writes: list[RecordWrite], previous=None) -> writer.ScopeBaseline:
    """Every case's violations (the read set it adds is left to the scoped check)."""
    state = ScopeState.load(None)
    state.written = frozenset(w.key for w in writes if w.kind == "case")
    return writer.ScopeBaseline(frozenset(), frozenset(run_scope_rules(state)))


def reference_check_scope(
    writes: list[RecordWrite], baseline: writer.ScopeBaseline
) -> frozenset[str]:
    before = baseline.violations
    state = ScopeState.load(None)
    written_cases = {w.key: w for w in writes if w.kind == "case"}
    state.written = frozenset(written_cases)
    written_rules = {w.key: w for w in writes if w.kind == "rule"}
    problems: list[RuleViolation] = []
    for violation in run_scope_rules(state):
        case_key = violation.record.removeprefix("case ")
        if case_key in written_cases:
            write = written_cases[case_key]
            bare = RuleViolation(violation.code, violation.message, violation.path)
            problems.append(bare.prefixed(write.path) if write.path else bare)
        elif violation not in before:
            problems.append(
                writer._as_rule_conflict(violation, written_rules) if written_rules else violation
            )
    for write in written_rules.values():
        problems.extend(writer._rule_self_conflict(write, state))
        for rule, violation in [*non_attribution_hits(state), *bridge_hits(state)]:
            case_key = violation.record.removeprefix("case ")
            if rule.key == write.key and case_key not in written_cases and violation in before:
                problems.append(writer._as_rule_conflict(violation, written_rules))
    if problems:
        raise RuleViolations(writer._unique(problems))
    return frozenset()


@contextmanager
def full_scan():
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(writer, "_scope_violations", reference_baseline)
        patch.setattr(writer, "_check_scope", reference_check_scope)
        yield


@contextmanager
def unchecked_scope():
    """Lets the generator store knowledge bases that already break scope rules, so that
    old problems elsewhere (which a change must not be refused for) are exercised too."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(writer, "_check_scope", lambda writes, before: frozenset())
        yield


# -- random knowledge bases -------------------------------------------------------------

KEYS = [f"CP90-00{i}" for i in range(1, 7)]


def claim_ids(key: str) -> list[str]:
    return [f"CLM-{key}-A", f"CLM-{key}-B"]


# Components the random cases name in their affected lists, and the supported claim
# (``CLM-<key>-S``, cited by nothing else) an affected entry may rest on.
COMPONENTS = [
    {
        "format": "claimsdb.component/1",
        "key": key,
        "name": key.removeprefix("CMP-").title(),
        "kind": "transfer_backend",
        "purl": "",
        "version_scheme": "pypi",
        "homepage": "",
        "aliases": [],
        "relations": [],
        "status": "active",
    }
    for key in ("CMP-CP90-X", "CMP-CP90-Y")
]
RANGES = [
    [],
    [{"events": [{"introduced": "0"}, {"fixed": "1.2"}]}],
    [{"events": [{"introduced": "1.0"}, {"last_affected": "1.10"}]}],
]


def supported_claim(key: str) -> dict:
    return {
        "id": f"CLM-{key}-S",
        "statement": f"The report says {key}'s component is affected.",
        "status": "supported",
        "status_note": "",
        "basis": "reported_finding",
        "origin": "human",
        "evidence": [{"source": SOURCES[0]["key"], "relation": "supports", "locator": ""}],
    }


def affected_entries(key: str, *, valid: bool = True):
    """Affected entries of case ``key``: resting on its supported claim (or on none, under
    investigation) when ``valid``; otherwise on any claim, with any status and range."""
    claims = (
        st.sampled_from([[f"CLM-{key}-S"], [f"CLM-{key}-A", f"CLM-{key}-S"]])
        if valid
        else st.lists(st.sampled_from([*claim_ids(key), f"CLM-{key}-S"]), max_size=2, unique=True)
    )
    statuses = ["affected", "fixed", "not_affected", "under_investigation"]
    ranges = RANGES if valid else [*RANGES, [{"events": [{"fixed": "1.0"}]}]]
    return st.builds(
        lambda component, status, claims, ranges: {
            "component": component,
            "status": status,
            "ranges": ranges,
            "versions": [],
            "claims": claims,
            "note": "",
        },
        st.sampled_from([c["key"] for c in COMPONENTS]),
        st.sampled_from(statuses),
        claims,
        st.sampled_from(ranges),
    )


def distinct_components(entries: list[dict]) -> list[dict]:
    """One entry per component (the first), as the rules want."""
    seen: set[str] = set()
    return [e for e in entries if not (e["component"] in seen or seen.add(e["component"]))]


@st.composite
def knowledge_bases(draw) -> dict:
    """A bundle of 3–6 cases with figures, attributions, relations, assessments, rules."""
    keys = KEYS[: draw(st.integers(min_value=3, max_value=6))]
    all_claims = [c for key in keys for c in claim_ids(key)]
    cases = {}
    for key in keys:
        figures = [
            {
                "id": f"FIG-{key}-{n}",
                "value": draw(st.integers(min_value=1, max_value=9)),
                "unit": "responses",
                "measure": "responses",
                "scope": draw(st.sampled_from(["production", "lab"])),
                "description": "",
                # usually its own claims; sometimes another case's
                "claims": sorted(
                    draw(
                        st.sets(
                            st.one_of(st.sampled_from(claim_ids(key)), st.sampled_from(all_claims)),
                            min_size=1,
                            max_size=2,
                        )
                    )
                ),
            }
            for n in range(draw(st.integers(min_value=0, max_value=2)))
        ]
        claims = [
            {
                "id": claim_id,
                "statement": f"Claim {claim_id}.",
                "status": "unverified",
                "status_note": "",
                "basis": "reported_finding",
                "origin": "human",
                "evidence": [],
            }
            for claim_id in claim_ids(key)
        ] + [supported_claim(key)]
        affected = distinct_components(draw(st.lists(affected_entries(key), max_size=2)))
        cases[key] = new_case(key, claims=claims, figures=figures)
        if affected:  # a document names the list only when it has entries
            cases[key]["affected"] = affected
    # a chain of same_event, then a few relations of any kind
    chain = draw(st.permutations(keys))[: draw(st.integers(min_value=0, max_value=len(keys)))]
    for a, b in zip(chain, chain[1:], strict=False):
        add_relation(cases, a, b, "same_event")
    kinds = st.sampled_from(["same_event", "related_distinct", "related_distinct", "variant_of"])
    for a, b, kind in draw(
        st.lists(st.tuples(st.sampled_from(keys), st.sampled_from(keys), kinds), max_size=3)
    ):
        if a != b:
            add_relation(cases, a, b, kind)
    owners = {f["id"]: key for key, case in cases.items() for f in case["figures"]}
    event = components(cases)
    if owners:
        for key in keys:
            # mostly figures of the same event, sometimes any figure
            near = sorted(f for f, owner in owners.items() if event[owner] == event[key])
            pool = st.sampled_from(sorted(owners))
            if near:
                pool = st.sampled_from(near) | st.sampled_from(near) | pool
            cases[key]["attributions"] = draw(st.lists(attributions(pool), max_size=2))
    for key in keys:
        cases[key]["assessments"] = draw(st.lists(assessments(key), max_size=1))
    rules = []
    if owners:
        for index, (figure, case, status) in enumerate(
            draw(
                st.lists(
                    st.tuples(
                        st.sampled_from(sorted(owners)),
                        st.sampled_from(keys),
                        st.sampled_from(["active", "active", "withdrawn"]),
                    ),
                    max_size=3,
                )
            )
        ):
            rules.append(rule_document(f"RULE-CP90-{index}", figure, case, status))
    return make_bundle(
        methods=METHODS,
        sources=SOURCES,
        components=COMPONENTS,
        cases=list(cases.values()),
        rules=rules,
    )


def make_bundle(**lists) -> dict:
    return {
        "format": SEED["format"],
        "methods": [],
        "sources": [],
        "components": [],
        "cases": [],
        "rules": [],
        **lists,
    }


def components(cases: dict) -> dict[str, str]:
    """Each case's same_event component, named by its smallest key."""
    event = {key: key for key in cases}
    changed = True
    while changed:
        changed = False
        for key, case in cases.items():
            for relation in case["relations"]:
                if relation["kind"] == "same_event":
                    low = min(event[key], event[relation["case"]])
                    for side in (key, relation["case"]):
                        if event[side] != low:
                            event[side], changed = low, True
    return event


def attributions(figures):
    return st.builds(
        lambda figure, role: {"figure": figure, "role": role, "note": ""},
        figures,
        st.sampled_from(["impact_basis", "context"]),
    )


def assessments(key: str):
    def build(impact, basis):
        assessment = copy.deepcopy(ASSESSMENT)
        assessment["impact"] = impact
        assessment["impact_ungraded_reason"] = "" if impact is not None else "Not graded."
        assessment["evidence_basis"]["claims"] = sorted(basis)
        return assessment

    return st.builds(
        build,
        st.one_of(st.none(), st.integers(min_value=0, max_value=4), st.integers(0, 4)),
        st.sets(st.sampled_from(claim_ids(key)), max_size=2),
    )


def add_relation(cases: dict, a: str, b: str, kind: str) -> None:
    """Both documents of a symmetric relation list it; a directed one only its subject's."""
    sides = [(a, b), (b, a)] if kind in ("same_event", "related_distinct") else [(a, b)]
    for subject, other in sides:
        relations = cases[subject]["relations"]
        entry = {"case": other, "kind": kind, "note": ""}
        if entry not in relations:
            relations.append(entry)
            relations.sort(key=lambda r: (r["case"], r["kind"]))


rule_document = functools.partial(support.rule_document, reason="They are different events.")


# -- random changes ---------------------------------------------------------------------


@st.composite
def changes(draw, bundle: dict) -> list[RecordWrite]:
    """One or two case edits, or a rule written (created, withdrawn, reactivated, moved)."""
    cases = {c["key"]: copy.deepcopy(c) for c in bundle["cases"]}
    keys = sorted(cases)
    figure_ids = [f["id"] for case in cases.values() for f in case["figures"]]
    if figure_ids and draw(st.integers(min_value=0, max_value=2)) == 0:
        rules = bundle["rules"]
        if rules and draw(st.booleans()):
            rule = copy.deepcopy(draw(st.sampled_from(rules)))
            rule["status"] = draw(st.sampled_from(["active", "withdrawn"]))
            if draw(st.booleans()):
                rule["case"] = draw(st.sampled_from(keys))
            mode = "update"
        else:
            rule = rule_document(
                "RULE-CP90-NEW",
                draw(st.sampled_from(figure_ids)),
                draw(st.sampled_from(keys)),
                "active",
            )
            mode = "create"
        return [RecordWrite(kind="rule", document=rule, mode=mode)]
    edited = draw(st.lists(st.sampled_from(keys), min_size=1, max_size=2, unique=True))
    for key in edited:
        for _ in range(draw(st.integers(min_value=1, max_value=3))):
            edit_case(draw, cases, key, keys, figure_ids)
    return [
        RecordWrite(kind="case", document=cases[key], mode="update", path=f"cases[{index}]")
        for index, key in enumerate(edited)
    ]


def edit_case(draw, cases: dict, key: str, keys: list[str], figure_ids: list[str]) -> None:
    document = cases[key]
    edit = draw(
        st.sampled_from(
            [
                "attribute",
                "unattribute",
                "relate",
                "unrelate",
                "cut",
                "cut",
                "assess",
                "unassess",
                "figure_scope",
                "figure_scope",
                "figure_claims",
                "affect",
                "unaffect",
                "withdraw_evidence",
            ]
        )
    )
    if edit == "attribute" and figure_ids:
        document["attributions"].append(draw(attributions(st.sampled_from(figure_ids))))
    elif edit == "unattribute" and document["attributions"]:
        document["attributions"].pop(draw(st.integers(0, len(document["attributions"]) - 1)))
    elif edit == "relate":
        other = draw(st.sampled_from([k for k in keys if k != key]))
        kind = draw(st.sampled_from(["same_event", "related_distinct", "variant_of"]))
        entry = {"case": other, "kind": kind, "note": ""}
        if entry not in document["relations"]:
            document["relations"].append(entry)
            document["relations"].sort(key=lambda r: (r["case"], r["kind"]))
    elif edit == "unrelate" and document["relations"]:
        document["relations"].pop(draw(st.integers(0, len(document["relations"]) - 1)))
    elif edit == "cut":
        # cutting a link of a same_event chain changes the event of cases far away
        document["relations"] = [r for r in document["relations"] if r["kind"] != "same_event"]
    elif edit == "assess":
        document["assessments"] = [draw(assessments(key))]
    elif edit == "unassess":
        document["assessments"] = []
    elif edit == "figure_scope" and document["figures"]:
        figure = draw(st.sampled_from(document["figures"]))
        figure["scope"] = "lab" if figure["scope"] == "production" else "production"
    elif edit == "affect":
        # any entry, valid or not: field rules refuse alike on either check
        document["affected"] = [
            *document.get("affected", []),
            draw(affected_entries(key, valid=False)),
        ]
    elif edit == "unaffect" and document.get("affected"):
        document["affected"].pop(draw(st.integers(0, len(document["affected"]) - 1)))
        if not document["affected"]:
            del document["affected"]
    elif edit == "withdraw_evidence":
        for claim in document["claims"]:
            if claim["id"] == f"CLM-{key}-S":
                claim.update(status="withdrawn", status_note="Withdrawn.")
    elif edit == "figure_claims" and document["figures"]:
        figure = draw(st.sampled_from(document["figures"]))
        everyone = sorted(c for k in keys for c in claim_ids(k))
        figure["claims"] = sorted(draw(st.sets(st.sampled_from(everyone), min_size=1, max_size=2)))


class _Accepted(Exception):
    def __init__(self, outcomes):
        self.outcomes = outcomes


def verdict(user, writes: list[RecordWrite]):
    """What the write path answers to ``writes``; nothing it writes is kept."""
    try:
        with transaction.atomic():
            outcomes = write_records(user=user, writes=copy.deepcopy(writes), summary="change")
            raise _Accepted([o.as_dict() for o in outcomes])
    except _Accepted as accepted:
        return "accepted", accepted.outcomes
    except RuleViolations as refused:
        return "refused", [(v.code, v.message, v.path, v.record) for v in refused.violations]


# Both property tests: 60 random knowledge bases each, the same ones on every run.
RANDOM_KNOWLEDGE_BASES = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.slow
@RANDOM_KNOWLEDGE_BASES
@given(st.data())
def test_scoped_check_refuses_exactly_what_the_full_scan_refuses(reviewer, data):
    bundle = data.draw(knowledge_bases())
    with transaction.atomic():
        with unchecked_scope():
            bundle_load(user=reviewer, bundle=copy.deepcopy(bundle), summary="Random base")
        writes = data.draw(changes(bundle))
        scoped = verdict(reviewer, writes)
        with full_scan():
            reference = verdict(reviewer, writes)
        assert scoped == reference
        # violations of written cases carry no record; others name theirs
        elsewhere = scoped[0] == "refused" and any(v[3] for v in scoped[1])
        event("refused elsewhere" if elsewhere else "not refused elsewhere")
        event(
            scoped[0]
            + " "
            + " ".join(sorted({v[0] for v in scoped[1]} if scoped[0] == "refused" else ()))
        )
        transaction.set_rollback(True)


# -- check_rules: the scope scan in batches is the full scan ------------------------------


def full_scan_by_case() -> list[RuleViolation]:
    """The full scan's violations in check_rules' order: case by case in key order, a
    case's in the full scan's order (a stable sort)."""
    return sorted(run_scope_rules(ScopeState.load(None)), key=lambda v: v.record)


def behind_the_services(draw, bundle: dict) -> None:
    """Rule rows written straight to the table: active rules naming a figure or a case
    that does not exist, or a pair another rule names already (the first by key counts)."""
    figure_ids = [f["id"] for case in bundle["cases"] for f in case["figures"]] or ["FIG-NONE"]
    keys = [case["key"] for case in bundle["cases"]]
    for n, (figure_id, case) in enumerate(
        draw(
            st.lists(
                st.tuples(
                    st.sampled_from([*figure_ids, "FIG-CP90-999-0"]),
                    st.sampled_from([*keys, "CP90-999"]),
                ),
                max_size=2,
            )
        )
    ):
        ScopeRule.objects.create(
            key=f"RULE-CP90-B{n}",
            kind="non_attribution",
            status="active",
            figure=figure_id,
            case=case,
            reason=f"Written behind the services ({n}).",
        )


@pytest.mark.slow
@RANDOM_KNOWLEDGE_BASES
@given(st.data())
def test_check_rules_scans_scope_in_batches_as_the_full_scan_does(reviewer, data):
    """Whatever the batch size, the batched scope scan of check_rules reports exactly the
    full scan's violations (codes, messages, paths, records), case by case in key order."""
    bundle = data.draw(knowledge_bases())
    with transaction.atomic():
        with unchecked_scope():
            bundle_load(user=reviewer, bundle=copy.deepcopy(bundle), summary="Random base")
        behind_the_services(data.draw, bundle)
        expected = full_scan_by_case()
        for size in (1, 2, 3, 500):
            assert list(scope_violations(batch_size=size)) == expected, size
        # check_rules ends with them, after the field rules of the cases and rules
        found = check_rules(batch_size=data.draw(st.integers(min_value=1, max_value=4)))
        assert found[len(found) - len(expected) :] == expected
        event("violations" if expected else "clean")
        transaction.set_rollback(True)


def test_a_batch_reports_its_own_cases_only(reviewer):
    """A and B conflict (same_event and related_distinct): the full scan names A, the
    first case of the stored relation. A batch holding only B loads A too (one event),
    yet neither reports the conflict for B nor leaves it out of A's batch."""
    cases = {A: new_case(A), B: new_case(B), C: new_case(C)}
    add_relation(cases, A, B, "same_event")
    add_relation(cases, A, B, "related_distinct")
    store(reviewer, cases)
    assert [v.record for v in full_scan_by_case()] == [f"case {A}"]
    assert batch_scope_violations([B]) == []
    assert [v.record for v in batch_scope_violations([A])] == [f"case {A}"]
    assert list(scope_violations(batch_size=1)) == full_scan_by_case()


# -- fixed examples: each thing a change reaches beyond the records it writes -----------------


def figure(key: str, *, scope: str = "production", claims: tuple[str, ...] = ()) -> dict:
    return {
        "id": f"FIG-{key}-0",
        "value": 3,
        "unit": "responses",
        "measure": "responses",
        "scope": scope,
        "description": "",
        "claims": list(claims),
    }


def claim(claim_id: str) -> dict:
    return {
        "id": claim_id,
        "statement": "A claim.",
        "status": "unverified",
        "status_note": "",
        "basis": "reported_finding",
        "origin": "human",
        "evidence": [],
    }


def graded(*claims: str) -> dict:
    assessment = copy.deepcopy(ASSESSMENT)
    assessment.update(impact=2, impact_ungraded_reason="")
    assessment["evidence_basis"]["claims"] = list(claims)
    return assessment


def attribution(figure_id: str, role: str = "context") -> dict:
    return {"figure": figure_id, "role": role, "note": ""}


def store(user, cases: dict, rules: list[dict] = ()) -> None:
    """Stored as given, scope problems included (they are the old problems elsewhere)."""
    with unchecked_scope():
        bundle_load(
            user=user,
            bundle=make_bundle(
                methods=METHODS, sources=SOURCES, cases=list(cases.values()), rules=list(rules)
            ),
            summary="Base",
        )


def edited(key: str, change) -> list[RecordWrite]:
    document = record_document("case", key)
    change(document)
    return [RecordWrite(kind="case", document=document, mode="update")]


def refused_records(user, writes: list[RecordWrite]) -> set[tuple[str, str]]:
    """The write path's refusal, checked against the full scan: ``{(code, record)}``."""
    scoped = verdict(user, writes)
    with full_scan():
        assert verdict(user, writes) == scoped
    assert scoped[0] == "refused", scoped
    return {(code, record) for code, _, _, record in scoped[1]}


A, B, C, D, E = "CP90-001", "CP90-002", "CP90-003", "CP90-004", "CP90-005"


def test_cutting_a_chain_is_checked_to_its_far_end(reviewer):
    """E-A-B-C-D are one event and D attributes E's figure: A cutting its link to B, two
    links away from D, makes that attribution cross-case."""
    cases = {
        A: new_case(A),
        B: new_case(B),
        C: new_case(C),
        D: new_case(D, attributions=[attribution(f"FIG-{E}-0")]),
        E: new_case(E, figures=[figure(E)]),
    }
    for a, b in ((E, A), (A, B), (B, C), (C, D)):
        add_relation(cases, a, b, "same_event")
    store(reviewer, cases)
    writes = edited(A, lambda d: d.update(relations=[r for r in d["relations"] if r["case"] != B]))
    assert refused_records(reviewer, writes) == {("scope.cross_case_figure", f"case {D}")}


def test_a_removed_relation_moves_an_old_problem_of_the_partner(reviewer):
    """B and C are both same_event and related_distinct (an old problem, at B's
    relations[2]); A drops its related_distinct relation to B, which moves that problem
    to relations[1]: the full scan calls it new, and so does the write path."""
    cases = {A: new_case(A), B: new_case(B), C: new_case(C)}
    add_relation(cases, A, B, "related_distinct")
    add_relation(cases, B, C, "related_distinct")
    add_relation(cases, B, C, "same_event")
    store(reviewer, cases)
    writes = edited(A, lambda d: d.update(relations=[]))
    assert refused_records(reviewer, writes) == {("scope.relation_conflict", f"case {B}")}


def test_a_figure_supporting_another_events_claim_is_checked_there(reviewer):
    """B's graded impact rests on B's claim, which only A's figure supports, in another
    event; A making that figure a lab figure changes B's problem."""
    cases = {
        A: new_case(A, figures=[figure(A, claims=(f"CLM-{B}-A",))]),
        B: new_case(B, claims=[claim(f"CLM-{B}-A")], assessments=[graded(f"CLM-{B}-A")]),
    }
    store(reviewer, cases)
    writes = edited(A, lambda d: d["figures"][0].update(scope="lab"))
    assert refused_records(reviewer, writes) == {("scope.lab_not_impact", f"case {B}")}


def test_a_changed_figure_is_checked_where_it_is_attributed(reviewer):
    """B attributes A's figure across events (an old problem); changing the figure's value
    changes how that problem reads."""
    cases = {
        A: new_case(A, figures=[figure(A)]),
        B: new_case(B, attributions=[attribution(f"FIG-{A}-0")]),
    }
    store(reviewer, cases)
    writes = edited(A, lambda d: d["figures"][0].update(value=4))
    assert refused_records(reviewer, writes) == {("scope.cross_case_figure", f"case {B}")}


def test_moving_a_rule_is_checked_where_it_stood(reviewer):
    """A rule forbids A's figure to B, which attributes it anyway (an old problem); moving
    the rule to C leaves B's attribution cross-case: a conflict of the rule."""
    cases = {
        A: new_case(A, figures=[figure(A)]),
        B: new_case(B, attributions=[attribution(f"FIG-{A}-0")]),
        C: new_case(C),
    }
    store(reviewer, cases, [rule_document("RULE-CP90-0", f"FIG-{A}-0", B, "active")])
    rule = record_document("rule", "RULE-CP90-0")
    rule["case"] = C
    writes = [RecordWrite(kind="rule", document=rule, mode="update")]
    assert refused_records(reviewer, writes) == {("scope.rule_conflict", f"case {B}")}


def test_a_graded_impact_on_an_own_figure_is_accepted(reviewer):
    cases = {
        A: new_case(
            A,
            claims=[claim(f"CLM-{A}-A")],
            figures=[figure(A, claims=(f"CLM-{A}-A",))],
            assessments=[graded(f"CLM-{A}-A")],
        )
    }
    store(reviewer, cases)
    writes = edited(A, lambda d: d.update(title="Renamed"))
    assert verdict(reviewer, writes)[0] == "accepted"


# -- cost: the same queries whatever the size of the knowledge base ----------------------


def populate(reviewer, count: int) -> None:
    """``count`` events of two cases each, one figure attributed across, a rule, an
    assessment: none related to CP99-001."""
    cases = []
    rules = []
    for n in range(count):
        a, b = f"CP80-{n:03d}", f"CP81-{n:03d}"
        figure = {
            "id": f"FIG-{a}",
            "value": 5,
            "unit": "responses",
            "measure": "responses",
            "scope": "production",
            "description": "",
            "claims": [f"CLM-{a}-A"],
        }
        claim = {
            "id": f"CLM-{a}-A",
            "statement": "A claim.",
            "status": "unverified",
            "status_note": "",
            "basis": "reported_finding",
            "origin": "human",
            "evidence": [],
        }
        assessment = copy.deepcopy(ASSESSMENT)
        assessment.update(impact=2, impact_ungraded_reason="")
        assessment["evidence_basis"]["claims"] = [claim["id"]]
        pair = {
            a: new_case(a, claims=[claim], figures=[figure], assessments=[assessment]),
            b: new_case(b, attributions=[{"figure": figure["id"], "role": "context", "note": ""}]),
        }
        add_relation(pair, a, b, "same_event")
        cases.extend(pair.values())
        rules.append(rule_document(f"RULE-CP80-{n:03d}", figure["id"], f"CP82-{n:03d}", "active"))
        cases.append(new_case(f"CP82-{n:03d}"))
    bundle_load(
        user=reviewer,
        bundle=make_bundle(methods=METHODS, sources=SOURCES, cases=cases, rules=rules),
        summary="Unrelated events",
    )


def update_queries(reviewer, count: int) -> int:
    with transaction.atomic():
        populate(reviewer, count)
        bundle_load(
            user=reviewer,
            bundle=make_bundle(cases=[new_case("CP99-001")]),
            summary="Mine",
        )
        document = record_document("case", "CP99-001")
        document["title"] = "Renamed"
        with CaptureQueriesContext(connection) as queries:
            case_update(user=reviewer, key="CP99-001", document=document, summary="Rename")
        transaction.set_rollback(True)
    return len(queries)


def test_a_case_update_costs_the_same_queries_in_a_larger_knowledge_base(reviewer):
    assert update_queries(reviewer, 1) == update_queries(reviewer, 20)


# -- check_rules' scope scan: memory follows the batch, queries follow the batches --------


def fill_free_lists() -> None:
    """CPython keeps up to 2,000 freed tuples of each length under 20 for reuse, and
    tracemalloc counts a tuple freed into a list not yet full as still allocated: a scan
    that frees more tuples would seem to hold more memory, up to the lists' caps. Filling
    them first (with tuples made before tracing starts) leaves the peak to the scan."""
    held = [[tuple(range(size)) for _ in range(2000)] for size in range(1, 20)]
    del held


def scope_scan_cost(reviewer, count: int) -> tuple[int, int]:
    """The tracemalloc peak and the queries of check_rules' scope scan in batches of 5,
    over ``count`` events of three cases (two of them one event, a rule, an assessment).
    Enough batches that the database driver's cache of statements (on SQLite, the last
    128 distinct statements) is full at every size."""
    with transaction.atomic():
        populate(reviewer, count)
        list(scope_violations(batch_size=5))  # imports and caches warmed up
        peaks = []
        for _ in range(2):  # the lower of two: a cache filled during one scan is no batch
            fill_free_lists()
            tracemalloc.start()
            try:  # the violations are counted, not kept: the scan's memory, not the caller's
                count = sum(1 for _ in scope_violations(batch_size=5))
                peaks.append(tracemalloc.get_traced_memory()[1])
            finally:
                tracemalloc.stop()
        peak = min(peaks)
        with CaptureQueriesContext(connection) as queries:
            found = list(scope_violations(batch_size=5))
        assert found == full_scan_by_case()
        assert count == len(found)
        transaction.set_rollback(True)
    return peak, len(queries)


@pytest.mark.slow
def test_the_scope_scan_holds_a_batch_and_costs_fixed_queries_per_batch(reviewer):
    # a first scan at the largest size fills the process's bounded caches (the driver's
    # statements, the ORM's) whatever ran before in this process, so that neither measured
    # size pays for filling them
    scope_scan_cost(reviewer, 120)
    (small, q1), (_, q2), (large, q3) = (scope_scan_cost(reviewer, n) for n in (60, 90, 120))
    if connection.vendor == "postgresql":  # SQLite reads every figure's claim list per batch
        assert large <= 1.5 * small, (small, large)
    # 90 more cases are 18 more batches: the same queries each time
    assert q3 - q2 == q2 - q1 > 0, (q1, q2, q3)


# -- the baseline of a change is loaded only for the cases that exist --------------------


def test_the_scope_baseline_is_loaded_only_for_cases_that_exist(reviewer, monkeypatch):
    loaded: list[set[str]] = []
    real = writer.load_scoped

    def recording(cases, **options):
        loaded.append(set(cases))
        return real(cases, **options)

    monkeypatch.setattr(writer, "load_scoped", recording)
    # two new cases related to each other: nothing existed, no baseline to load
    bundle_load(
        user=reviewer,
        bundle=bundle_of([relate(new_case(A), B, "same_event"), new_case(B)]),
        summary="New",
    )
    assert loaded == [{A, B}]  # the check after the change only
    loaded.clear()
    # a new case joining their event: the baseline holds the two that exist
    bundle_load(
        user=reviewer,
        bundle={**bundle_of([relate(new_case(C), A, "same_event")]), "cases": [
            relate(new_case(C), A, "same_event"),
            relate(relate(record_document("case", A), B, "same_event"), C, "same_event"),
        ]},
        summary="Joined",
    )  # fmt: skip
    assert loaded == [{A, B}, {A, B, C}]


@pytest.mark.skipif("connection.vendor != 'postgresql'")
def test_the_scope_and_context_queries_of_an_update_are_put_together_once(reviewer, monkeypatch):
    """On PostgreSQL the scope pass (``rules.scoped``) and the field rules' look-ups
    (``rules.context``) put their queries together once per process: a second update
    compiles none of them but the methods' (a query of models)."""
    import traceback

    from django.db.models.sql.compiler import SQLCompiler

    populate(reviewer, 2)
    bundle_load(user=reviewer, bundle=make_bundle(cases=[new_case("CP99-001")]), summary="Mine")

    def rename(title: str) -> None:
        document = record_document("case", "CP99-001")
        document["title"] = title
        case_update(user=reviewer, key="CP99-001", document=document, summary=title)

    rename("First")
    compiled: list[str] = []
    original = SQLCompiler.as_sql

    def as_sql(self, *args, **kwargs):
        for frame in traceback.extract_stack():
            if frame.filename.endswith(("rules/scoped.py", "rules/context.py")):
                compiled.append(f"{frame.filename.rsplit('/', 1)[-1]}:{frame.name}")
                break
        return original(self, *args, **kwargs)

    monkeypatch.setattr(SQLCompiler, "as_sql", as_sql)
    rename("Second")
    assert record_document("case", "CP99-001")["title"] == "Second"
    assert compiled == ["context.py:case_contexts"], compiled  # the methods
