"""The scope state of the part of the knowledge base that one change can affect.

``ScopeState.load(None)`` reads every figure, attribution, relation, rule and assessment;
``check_rules`` needs that, a write does not. A case's scope violations depend only on

* its own attributions, assessments and relations (the relations give the paths);
* its ``same_event`` component (which figures are attributable to it, which rules a
  ``same_event`` relation would bridge);
* the active rules naming a case of that component, and the facts of the figures it
  attributes, that its rules name, or that support its assessments' evidence basis.

So ``affected_cases`` names every case whose violations a change can alter, and
``load_scoped`` loads exactly what those cases' violations depend on. The rules then run
on that state with ``report`` set to those cases and report, for them, exactly what the
full scan reports. docs/write-path.md explains the choice step by step.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from django.db import connection
from django.db.models import BooleanField, Q, QuerySet
from django.db.models.expressions import RawSQL

from claimsdb.choices import RelationKind
from claimsdb.models import Assessment, Attribution, Claim, Figure, Relation, ScopeRule
from claimsdb.records.batched import (
    CompiledQuery,
    compiled_among,
    compiled_query,
    fetch_together,
)

from .state import (
    FIGURE_FACTS,
    FigureFact,
    RuleFact,
    ScopeState,
    attribution_queryset,
)


def affected_cases(
    *, cases: dict[str, dict[str, Any]], rules: dict[str, dict[str, Any]]
) -> set[str]:
    """The cases whose scope violations writing these documents can change.

    Call it before the change is applied: it reads the records as they are and the
    documents as they will be, so it covers both. ``cases`` and ``rules`` map keys to the
    documents being written. The result is closed under ``same_event`` before and after
    the change.
    """
    seeds = set(cases)
    figure_ids: set[str] = set()
    figure_claims: set[str] = set()
    for document in cases.values():
        # relations as they will be (a new partner's paths and component change)
        seeds |= {relation["case"] for relation in document["relations"]}
        for figure in document["figures"]:
            figure_ids.add(figure["id"])
            figure_claims |= set(figure["claims"])
    for document in rules.values():
        seeds.add(document["case"])
    # the records as they are, in two rounds of queries sent together (``fetch_together``),
    # each put together once per process (``compiled_query``)
    first: dict[str, CompiledQuery] = {}
    if cases:
        # relations as they are (a removed relation changes the partner too)
        first["relations"] = relations_of(cases, "case__key", "other__key")
        # figures as they are: their facts may change or they may go
        first["figures"] = compiled_among(
            "scoped.case_figures",
            Figure,
            lambda keys: Figure.objects.filter(case__key__among=keys).values_list(
                "figure_id", "claims"
            ),
            cases,
        )
    if rules:
        # a rule may be moved to another case: the case it named keeps changing too
        first["rules"] = compiled_among(
            "scoped.rule_cases",
            ScopeRule,
            lambda keys: ScopeRule.objects.filter(key__among=keys).values_list("case"),
            rules,
        )
    found = fetch_together(first)
    for case, other in found.get("relations", []):
        seeds |= {case, other}
    for figure_id, claims in found.get("figures", []):
        figure_ids.add(figure_id)
        figure_claims |= set(claims)
    seeds |= {case for (case,) in found.get("rules", [])}
    second: dict[str, CompiledQuery] = {}
    if figure_ids:
        # whoever attributes these figures or is protected from them by a rule sees
        # their facts (owner, scope, value) in its violations
        second["attributing"] = compiled_among(
            "scoped.attributing",
            Attribution,
            lambda ids: Attribution.objects.filter(figure_id__among=ids).values_list("case__key"),
            figure_ids,
        )
        second["protected"] = compiled_among(
            "scoped.protected",
            ScopeRule,
            lambda ids: ScopeRule.objects.filter(status="active", figure__among=ids).values_list(
                "case"
            ),
            figure_ids,
        )
    if figure_claims:
        # an assessment's basis claims are its case's own; a figure of another case may
        # support them, so the owners of the claims these figures support are affected
        second["claim_owners"] = compiled_among(
            "scoped.claim_owners",
            Claim,
            lambda ids: Claim.objects.filter(claim_id__among=ids).values_list("case__key"),
            figure_claims,
        )
    for rows in fetch_together(second).values():
        seeds |= {key for (key,) in rows}
    return same_event_closure(seeds)


def same_event_closure(cases: Iterable[str]) -> set[str]:
    """``cases`` and every case joined to one of them by a chain of ``same_event``.

    One query per round, each asking only for the relations of the cases found in the
    previous round: the number of rounds is the distance from ``cases`` to the farthest
    case of their components (at most a component's diameter plus one), never the size
    of the knowledge base.
    """
    found = set(cases)
    frontier = set(found)
    while frontier:
        query = relations_of(frontier, "case__key", "other__key", kind=RelationKind.SAME_EVENT)
        frontier = {key for pair in fetch_together({"rows": query})["rows"] for key in pair}
        frontier -= found
        found |= frontier
    return found


def load_scoped(cases: set[str], *, figures: Iterable[str] = ()) -> ScopeState:
    """The scope state of ``cases``, which must be closed under ``same_event``.

    Violations are reported for ``cases`` only, and are exactly those the full scan
    reports for them. ``figures`` adds figure facts that a caller needs besides (the
    figure a written rule names). Five queries, whatever the size of the knowledge base
    (the first four sent together: on PostgreSQL one round trip); each reads rows in the
    order the full scan reads them, so violations come out in the same order too.
    """
    state = ScopeState(report=set(cases))
    # four independent queries, sent together (``fetch_together``)
    found = fetch_together(
        {
            # in the full scan's order (the model's: case, other, kind)
            "relations": relations_of(cases, "case__key", "other__key", "kind", ordered=True),
            "attributions": compiled_among(
                "scoped.attributions",
                Attribution,
                lambda keys: attribution_queryset(
                    Attribution.objects.filter(case__key__among=keys)
                ),
                cases,
            ),
            "assessments": compiled_among(
                "scoped.assessments",
                Assessment,
                lambda keys: Assessment.objects.filter(case__key__among=keys).values_list(
                    "case__key", "position", "impact", "basis_claims"
                ),
                cases,
            ),
            # rules naming a case of a component decide its bridges and its forbidden figures
            "rules": compiled_among(
                "scoped.rules",
                ScopeRule,
                lambda keys: (
                    ScopeRule.objects.filter(status="active", case__among=keys)
                    .order_by("key")
                    .values_list("key", "figure", "case", "reason")
                ),
                cases,
            ),
        }
    )
    state.relations = found["relations"]
    state.attributions = cast("list[tuple[str, int, str, str]]", found["attributions"])
    state.assessments = [
        (case, position, impact, frozenset(claims))
        for case, position, impact, claims in found["assessments"]
    ]
    state.rules = [RuleFact(*row) for row in found["rules"]]
    wanted = {figure for _, _, figure, _ in state.attributions}
    wanted |= {rule.figure for rule in state.rules}
    wanted |= set(figures)
    basis = set().union(
        *(claims for _, _, impact, claims in state.assessments if impact is not None)
    )
    # the figures named, and those supporting a basis claim: a union of two index lookups
    # (one condition for either would read every figure), in the full scan's order; and,
    # where an impact is graded, the cases' own figures: an impact refusal names the claims
    # that would qualify (the cases are closed under same_event: their whole events)
    graded = any(impact is not None for _, _, impact, _ in state.assessments)
    ordered = sorted(basis)
    chunks = [
        ordered[start : start + SUPPORTING_CHUNK]
        for start in range(0, len(ordered), SUPPORTING_CHUNK)
    ]
    params: dict[str, Any] = {"wanted": sorted(wanted)}
    if graded:
        params["cases"] = sorted(cases)
    params.update({f"claims{n}": chunk for n, chunk in enumerate(chunks)})

    def build(wanted: Any, cases: Any = None, **supported: Any) -> QuerySet:
        rows = (
            Figure.objects.filter(figure_id__among=wanted)
            .order_by()
            .values_list(*FIGURE_FACTS, "position")
        )
        if cases is not None:
            own = Figure.objects.filter(case__key__among=cases).order_by()
            rows = rows.union(own.values_list(*FIGURE_FACTS, "position"))
        for n in range(len(supported)):
            supporting = Figure.objects.filter(_supporting_among(supported[f"claims{n}"]))
            rows = rows.union(supporting.order_by().values_list(*FIGURE_FACTS, "position"))
        return rows.order_by("case__key", "position")

    facts: list[Any] = []
    if wanted or graded or chunks:  # else no query, as the ORM sends none for an empty list
        name = f"scoped.figures:{graded}:{len(chunks)}"
        facts = fetch_together({"rows": compiled_query(name, Figure, build, params)})["rows"]
    for figure_id, case, value, unit, scope, claims, _ in facts:
        state.figures[figure_id] = FigureFact(
            figure_id, case, value, unit, scope, frozenset(claims)
        )
    state._build_indexes()
    return state


def relations_of(
    cases: Iterable[str], *fields: str, kind: str | None = None, ordered: bool = False
) -> CompiledQuery:
    """``fields`` of the relations with either side in ``cases`` (of ``kind`` if given;
    ``ordered``: in the order of ``fields``): one query, the union of the relations found
    from each side, put together once per process (``compiled_query``). Each side is an index
    lookup (the cases by key, then their relations by case); asking for either side in one
    condition would read every relation, whatever the number of ``cases``. ``fields`` must
    identify a relation (a relation found from both sides comes back once)."""

    def build(keys: Any) -> QuerySet:
        rows = Relation.objects.all() if kind is None else Relation.objects.filter(kind=kind)
        union = (
            rows.filter(case__key__among=keys)
            .order_by()
            .values_list(*fields)
            .union(rows.filter(other__key__among=keys).order_by().values_list(*fields))
        )
        return union.order_by(*fields) if ordered else union

    name = f"scoped.relations:{kind}:{','.join(fields)}:{ordered}"
    return compiled_among(name, Relation, build, cases)


# Basis claims asked for in one index lookup: with many more, PostgreSQL reads every
# figure's claim list instead of the GIN index (a batch of check_rules asks for hundreds).
SUPPORTING_CHUNK = 32


def _supporting_among(claims: Any) -> Q | RawSQL:
    """``_supporting`` in a query put together once (``compiled_query``): on PostgreSQL the
    same ``?|`` condition on the figure's row, its claims one array parameter (``claims``
    is then the query's ``Marker``), answered from the same GIN index; elsewhere
    ``_supporting`` itself."""
    if connection.vendor != "postgresql":
        return _supporting(set(claims))
    quote = connection.ops.quote_name
    column = f"{quote(Figure._meta.db_table)}.{quote(Figure._meta.get_field('claims').column)}"
    return RawSQL(f"{column} ?| %s::text[]", [claims], output_field=BooleanField())


def _supporting(claims: set[str]) -> Q:
    """Figures that support any of ``claims`` (a figure may support another case's claims)."""
    if connection.vendor == "postgresql":
        # jsonb ?| : answered from the GIN index on figure claims
        return Q(claims__has_any_keys=sorted(claims))
    # SQLite has no index over list elements: json_each reads each figure's claim list
    table = Figure._meta.db_table
    marks = ", ".join(["%s"] * len(claims))
    return Q(
        pk__in=RawSQL(
            f'SELECT f.id FROM "{table}" f, json_each(f.claims) j WHERE j.value IN ({marks})',
            sorted(claims),
        )
    )
