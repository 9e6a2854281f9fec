"""The knowledge base as the scope rules see it, loaded in a fixed number of queries."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, cast

from django.db.models import QuerySet

from claimsdb.choices import SYMMETRIC_RELATIONS
from claimsdb.models import Assessment, Attribution, Figure, Relation, ScopeRule
from claimsdb.records.figures import figure_text


@dataclass(frozen=True)
class FigureFact:
    figure_id: str
    case: str
    value: str | float  # the number as written (the table keeps it as text)
    unit: str
    scope: str
    claims: frozenset[str]

    def describe(self) -> str:
        figure = figure_text(self.value, self.unit)
        return f"{self.figure_id} ({figure}, {self.scope}, of case {self.case})"


# What a figure's facts are read from, as plain rows (no model instance per figure).
FIGURE_FACTS = ("figure_id", "case__key", "value", "unit", "scope", "claims")


def attribution_rows(attributions: QuerySet[Attribution]) -> list[tuple[str, int, str, str]]:
    """``(case key, position, figure ID, role)`` of each attribution, as plain rows.

    An attribution's ``figure_id`` holds the figure's ID (the key's ``to_field``), which
    django-stubs types as the figure's primary key, hence the cast."""
    return cast("list[tuple[str, int, str, str]]", list(attribution_queryset(attributions)))


def attribution_queryset(attributions: QuerySet[Attribution]) -> QuerySet[Any]:
    """The query of ``attribution_rows``, to run with others (``fetch_together``)."""
    return attributions.values_list("case__key", "position", "figure_id", "role")


@dataclass(frozen=True)
class RuleFact:
    key: str
    figure: str
    case: str
    reason: str


@dataclass
class ScopeState:
    """Figures, attributions, relations, active rules and graded assessments.

    ``report`` limits which cases' violations are reported (None: every case), so that a
    write is refused for what it breaks, not for old problems elsewhere. ``written`` names
    the cases a write sends: a problem of a relation both sides list is reported on the
    side being written, where its editor can see it at the relation's row.
    """

    figures: dict[str, FigureFact] = field(default_factory=dict)
    attributions: list[tuple[str, int, str, str]] = field(default_factory=list)
    relations: list[tuple[str, str, str]] = field(default_factory=list)
    rules: list[RuleFact] = field(default_factory=list)
    assessments: list[tuple[str, int, int | None, frozenset[str]]] = field(default_factory=list)
    report: set[str] | None = None
    written: frozenset[str] = frozenset()
    _component: dict[str, str] = field(default_factory=dict)
    _rule_for: dict[tuple[str, str], RuleFact] = field(default_factory=dict)
    _supporting: dict[str, list[FigureFact]] = field(default_factory=dict)
    _figure_order: dict[str, int] = field(default_factory=dict)
    _event_relations: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    _paths: dict[tuple[str, str, str], str] | None = None

    @classmethod
    def load(cls, report: set[str] | None = None) -> ScopeState:
        state = cls(report=report)
        for figure_id, case, value, unit, scope, claims in Figure.objects.values_list(
            *FIGURE_FACTS
        ):
            state.figures[figure_id] = FigureFact(
                figure_id, case, value, unit, scope, frozenset(claims)
            )
        state.attributions = attribution_rows(Attribution.objects.all())
        state.relations = list(Relation.objects.values_list("case__key", "other__key", "kind"))
        state.rules = [
            RuleFact(*row)
            for row in ScopeRule.objects.filter(status="active")
            .order_by("key")
            .values_list("key", "figure", "case", "reason")
        ]
        state.assessments = [
            (case, position, impact, frozenset(claims))
            for case, position, impact, claims in Assessment.objects.values_list(
                "case__key", "position", "impact", "basis_claims"
            )
        ]
        state._build_indexes()
        return state

    def _build_indexes(self) -> None:
        """The indexes the rules look facts up by, built once the facts are loaded: the
        ``same_event`` components, the first active rule (by key) naming each (figure, case)
        pair, the figures supporting each claim, and each component's ``same_event``
        relations. Each rule then costs a lookup per fact it checks, not a pass over every
        rule, figure or relation: a full scan stays linear in the size of the knowledge base.
        """
        parent: dict[str, str] = {}

        def find(key: str) -> str:
            parent.setdefault(key, key)
            while parent[key] != key:
                parent[key] = parent[parent[key]]
                key = parent[key]
            return key

        for case, other, kind in self.relations:
            if kind == "same_event":
                parent[find(case)] = find(other)
        self._component = {key: find(key) for key in parent}
        self._rule_for = {}
        for rule in self.rules:
            self._rule_for.setdefault((rule.figure, rule.case), rule)
        self._supporting = defaultdict(list)
        for figure in self.figures.values():
            for claim in figure.claims:
                self._supporting[claim].append(figure)
        self._figure_order = {figure_id: n for n, figure_id in enumerate(self.figures)}
        self._event_relations = defaultdict(list)
        for relation in self.relations:
            if relation[2] == "same_event":
                self._event_relations[self._component[relation[0]]].append(relation)
        self._paths = None

    def reports(self, case: str) -> bool:
        return self.report is None or case in self.report

    def same_event(self, a: str, b: str) -> bool:
        """Whether two cases are one event, directly or through a chain of same_event."""
        if a == b:
            return True
        return self._component.get(a, a) == self._component.get(b, b)

    def forbidding_rule(self, figure_id: str, case: str) -> RuleFact | None:
        """The first active rule, in key order, that forbids ``figure_id`` to ``case``."""
        return self._rule_for.get((figure_id, case))

    def attributable(self, figure: FigureFact, case: str) -> bool:
        if self.forbidding_rule(figure.figure_id, case):
            return False
        return self.same_event(figure.case, case)

    def supporting(self, claims: frozenset[str]) -> list[FigureFact]:
        """The figures supporting any of ``claims``, in the order ``figures`` holds them."""
        found = {f.figure_id: f for claim in claims for f in self._supporting.get(claim, ())}
        return sorted(found.values(), key=lambda f: self._figure_order[f.figure_id])

    def event_relations(self, case: str) -> list[tuple[str, str, str]]:
        """The ``same_event`` relations of ``case``'s component, in ``relations`` order."""
        if case not in self._component:
            return []
        return self._event_relations[self._component[case]]

    def relation_paths(self) -> dict[tuple[str, str, str], str]:
        """Where each relation stands in each case's document: ``(case, other, kind) → path``.

        Documents list a case's relations sorted by (other case, kind); symmetric relations
        appear in both cases' documents. Computed once per state.
        """
        if self._paths is not None:
            return self._paths
        listed: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for case, other, kind in self.relations:
            listed[case].append((other, kind))
            if kind in SYMMETRIC_RELATIONS:
                listed[other].append((case, kind))
        paths = {}
        for case, entries in listed.items():
            for index, (other, kind) in enumerate(sorted(entries)):
                paths[(case, other, kind)] = f"relations[{index}]"
        self._paths = paths
        return paths
