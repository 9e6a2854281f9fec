"""The knowledge base as the scope rules see it, loaded in a fixed number of queries."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from claimsdb.choices import SYMMETRIC_RELATIONS
from claimsdb.models import Assessment, Attribution, Figure, Relation, ScopeRule


@dataclass(frozen=True)
class FigureFact:
    figure_id: str
    case: str
    value: float
    unit: str
    scope: str
    claims: frozenset[str]

    def describe(self) -> str:
        value = int(self.value) if float(self.value).is_integer() else self.value
        return f"{self.figure_id} ({value} {self.unit}, {self.scope}, of case {self.case})"


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
    write is refused for what it breaks, not for old problems elsewhere.
    """

    figures: dict[str, FigureFact] = field(default_factory=dict)
    attributions: list[tuple[str, int, str, str]] = field(default_factory=list)
    relations: list[tuple[str, str, str]] = field(default_factory=list)
    rules: list[RuleFact] = field(default_factory=list)
    assessments: list[tuple[str, int, int | None, frozenset[str]]] = field(default_factory=list)
    report: set[str] | None = None
    _component: dict[str, str] = field(default_factory=dict)
    _forbidding: dict[tuple[str, str], RuleFact] = field(default_factory=dict)
    _forbidding_of: list[RuleFact] | None = None  # the list ``_forbidding`` indexes

    @classmethod
    def load(cls, report: set[str] | None = None) -> ScopeState:
        state = cls(report=report)
        for f in Figure.objects.select_related("case").only(
            "figure_id", "value", "unit", "scope", "claims", "case__key"
        ):
            state.figures[f.figure_id] = FigureFact(
                f.figure_id, f.case.key, f.value, f.unit, f.scope, frozenset(f.claims)
            )
        state.attributions = [
            (case, position, figure, role)
            for case, position, figure, role in Attribution.objects.values_list(
                "case__key", "position", "figure_id", "role"
            )
        ]
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
        state._build_components()
        return state

    def _build_components(self) -> None:
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

    def reports(self, case: str) -> bool:
        return self.report is None or case in self.report

    def same_event(self, a: str, b: str) -> bool:
        """Whether two cases are one event, directly or through a chain of same_event."""
        if a == b:
            return True
        return self._component.get(a, a) == self._component.get(b, b)

    def forbidding_rule(self, figure_id: str, case: str) -> RuleFact | None:
        """The first rule (by key) forbidding ``figure_id`` to ``case``, from an index of
        ``rules`` built on first use (a scan per attribution made a full check quadratic)."""
        if self._forbidding_of is not self.rules:
            index: dict[tuple[str, str], RuleFact] = {}
            for rule in self.rules:
                index.setdefault((rule.figure, rule.case), rule)
            self._forbidding, self._forbidding_of = index, self.rules
        return self._forbidding.get((figure_id, case))

    def attributable(self, figure: FigureFact, case: str) -> bool:
        if self.forbidding_rule(figure.figure_id, case):
            return False
        return self.same_event(figure.case, case)

    def relation_paths(self) -> dict[tuple[str, str, str], str]:
        """Where each relation stands in each case's document: ``(case, other, kind) → path``.

        Documents list a case's relations sorted by (other case, kind); symmetric relations
        appear in both cases' documents.
        """
        listed: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for case, other, kind in self.relations:
            listed[case].append((other, kind))
            if kind in SYMMETRIC_RELATIONS:
                listed[other].append((case, kind))
        paths = {}
        for case, entries in listed.items():
            for index, (other, kind) in enumerate(sorted(entries)):
                paths[(case, other, kind)] = f"relations[{index}]"
        return paths
