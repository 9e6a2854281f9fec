"""Scope rules (docs/scope-rules.md): figures stay with their event, on every write path."""

from __future__ import annotations

from collections.abc import Iterator

from claimsdb.codes import AssessmentCode, ScopeCode
from claimsdb.records import RuleViolation

from .registry import scope_rule
from .state import RuleFact, ScopeState


def case_record(key: str) -> str:
    return f"case {key}"


def non_attribution_hits(state: ScopeState) -> Iterator[tuple[RuleFact, RuleViolation]]:
    """Every attribution that a non-attribution rule forbids, with the rule it breaks."""
    for case, position, figure_id, role in state.attributions:
        rule = state.forbidding_rule(figure_id, case)
        if rule is None:
            continue
        figure = state.figures[figure_id]
        yield (
            rule,
            RuleViolation(
                ScopeCode.NON_ATTRIBUTION,
                f"{figure.describe()} must not be attributed to {case} "
                f"(as {role.replace('_', ' ')}): rule {rule.key}: {rule.reason}",
                f"attributions[{position}].figure",
                case_record(case),
            ),
        )


def bridge_hits(state: ScopeState) -> Iterator[tuple[RuleFact, RuleViolation]]:
    """Every same_event relation that would make a forbidden figure attributable."""
    paths = state.relation_paths()
    for rule in state.rules:
        figure = state.figures.get(rule.figure)
        if figure is None or figure.case == rule.case:
            continue
        if not state.same_event(figure.case, rule.case):
            continue
        # the same_event relations of the rule's case's event, in the order of relations
        for case, other, kind in state.event_relations(rule.case):
            for subject, partner in ((case, other), (other, case)):
                yield (
                    rule,
                    RuleViolation(
                        ScopeCode.RELATION_CONFLICT,
                        f"a same_event relation between {subject} and {partner} would make "
                        f"{figure.describe()} attributable to {rule.case}, which rule {rule.key} "
                        f"forbids: {rule.reason}",
                        paths[(subject, partner, kind)]
                        if (subject, partner, kind) in paths
                        else paths[(case, other, kind)],
                        case_record(subject),
                    ),
                )


@scope_rule(ScopeCode.NON_ATTRIBUTION)
def no_forbidden_attribution(state: ScopeState) -> Iterator[RuleViolation]:
    """A figure named by a non-attribution rule is never attributed to the case it names."""
    for _, violation in non_attribution_hits(state):
        if state.reports(violation.record.removeprefix("case ")):
            yield violation


@scope_rule(ScopeCode.CROSS_CASE_FIGURE)
def figures_stay_with_their_event(state: ScopeState) -> Iterator[RuleViolation]:
    """A figure is attributable only to its own case and to cases of the same event."""
    for case, position, figure_id, _role in state.attributions:
        if not state.reports(case) or state.forbidding_rule(figure_id, case):
            continue  # a rule that names the pair says it better
        figure = state.figures[figure_id]
        if not state.same_event(figure.case, case):
            yield RuleViolation(
                ScopeCode.CROSS_CASE_FIGURE,
                f"{figure.describe()} belongs to another event: a figure may be attributed only "
                f"to its own case and to cases related to it as same_event, and {case} is not",
                f"attributions[{position}].figure",
                case_record(case),
            )


@scope_rule(ScopeCode.LAB_NOT_IMPACT, AssessmentCode.IMPACT_BASIS)
def impact_rests_on_production_figures(state: ScopeState) -> Iterator[RuleViolation]:
    """A graded impact rests on a production figure of this event; lab figures never count."""
    for case, position, figure_id, role in state.attributions:
        figure = state.figures[figure_id]
        if state.reports(case) and role == "impact_basis" and figure.scope == "lab":
            yield RuleViolation(
                ScopeCode.LAB_NOT_IMPACT,
                f"{figure.describe()} is a lab observation and is never an impact basis",
                f"attributions[{position}].role",
                case_record(case),
            )
    for case, position, impact, basis in state.assessments:
        if impact is None or not state.reports(case):
            continue
        supported = state.supporting(basis)
        if any(f.scope == "production" and state.attributable(f, case) for f in supported):
            continue
        lab = [f for f in supported if f.scope == "lab"]
        if lab:
            yield RuleViolation(
                ScopeCode.LAB_NOT_IMPACT,
                f"impact {impact} rests on lab figures ({', '.join(f.describe() for f in lab)}); "
                "lab observations are never an impact basis. Leave the impact ungraded with a "
                "reason, or add to the evidence basis a claim that supports a production figure "
                "of this event",
                f"assessments[{position}].impact",
                case_record(case),
            )
        else:
            yield RuleViolation(
                AssessmentCode.IMPACT_BASIS,
                f"impact {impact} is graded, but no claim in the evidence basis supports a "
                f"production figure attributable to {case}. Leave the impact ungraded with a "
                f"reason, or add such a claim to the evidence basis{qualifying(state, case)}",
                f"assessments[{position}].impact",
                case_record(case),
            )


QUALIFYING_NAMED = 5


def qualifying(state: ScopeState, case: str) -> str:
    """The end of an impact refusal: which claims would qualify — those supporting a
    production figure attributable to ``case`` (its own event's figures, the state holds
    them all) — or that none does yet."""
    figures = sorted(
        (
            f
            for f in state.figures.values()
            if f.scope == "production" and f.claims and state.attributable(f, case)
        ),
        key=lambda f: f.figure_id,
    )
    if not figures:
        return (
            f"; no claim supports a production figure attributable to {case} yet: add one to "
            "a production figure of this event (its supporting claims) first"
        )
    named = [
        f"{', '.join(sorted(f.claims))} (supporting {f.describe()})"
        for f in figures[:QUALIFYING_NAMED]
    ]
    more = len(figures) - QUALIFYING_NAMED
    return ": " + "; ".join(named) + (f"; and claims of {more} more figures" if more > 0 else "")


@scope_rule(ScopeCode.RELATION_CONFLICT)
def relations_agree(state: ScopeState) -> Iterator[RuleViolation]:
    """Two cases are not both same_event and related_distinct, and no same_event bridges a rule."""
    paths = state.relation_paths()
    kinds: dict[frozenset[str], set[str]] = {}
    for case, other, kind in state.relations:
        kinds.setdefault(frozenset((case, other)), set()).add(kind)

    # Each relation on one side (the other side lists it too when it is symmetric): the
    # side being written if either is. A conflict of kinds is the relation's one problem;
    # otherwise each rule it bridges is named, every one of them.
    def sides(case: str, other: str) -> tuple[tuple[str, str], tuple[str, str]]:
        if other in state.written and case not in state.written:
            return ((other, case), (case, other))
        return ((case, other), (other, case))

    conflicting: set[frozenset[str]] = set()
    for case, other, kind in state.relations:
        if kind != "same_event" or "related_distinct" not in kinds[frozenset((case, other))]:
            continue
        for subject, partner in sides(case, other):
            if state.reports(subject) and frozenset((case, other)) not in conflicting:
                conflicting.add(frozenset((case, other)))
                yield RuleViolation(
                    ScopeCode.RELATION_CONFLICT,
                    f"{subject} and {partner} cannot be both the same event and related but "
                    "distinct",
                    paths[(subject, partner, kind)],
                    case_record(subject),
                )
    partners = {(subject, path): partner for (subject, partner, _), path in paths.items()}
    hits: dict[tuple[frozenset[str], str], RuleViolation] = {}
    for rule, violation in bridge_hits(state):
        subject = violation.record.removeprefix("case ")
        relation = frozenset((subject, partners.get((subject, violation.path), "")))
        if not state.reports(subject) or relation in conflicting:
            continue
        kept = hits.get((relation, rule.key))
        if kept is None or (
            subject in state.written and kept.record.removeprefix("case ") not in state.written
        ):
            hits[(relation, rule.key)] = violation
    yield from hits.values()
