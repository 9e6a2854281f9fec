"""Reads of what bounds a case: the scope rules naming it or its figures, the figures they
name, and the relations pointing at it — for the record page's Scope section and the
attribution form."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db.models import Q, QuerySet

from claimsdb.choices import SYMMETRIC_RELATIONS
from claimsdb.models import Figure, Relation, ScopeRule
from claimsdb.records.figures import figure_number, figure_words

from .cases import case_document_or_none


def rule_list() -> QuerySet[ScopeRule]:
    return ScopeRule.objects.order_by("key")


def case_scope(key: str) -> dict[str, Any]:
    """What bounds a case, for the record page's Scope section.

    ``rules``: active non-attribution rules naming this case (with the figure described:
    "the 155 production responses of CP22-002 must not be attributed to this case") and
    rules protecting this case's own figures from other cases; ``relations``: the case's
    relations to other cases as its document lists them, plus directed relations pointing
    at it from elsewhere (``incoming``).
    """
    rules = list(ScopeRule.objects.filter(status="active").filter(case=key).order_by("key"))
    own_figures = dict(Figure.objects.filter(case__key=key).values_list("figure_id", "case__key"))
    protecting = list(
        ScopeRule.objects.filter(status="active", figure__in=list(own_figures)).order_by("key")
    )
    figures = {
        f.figure_id: f
        for f in Figure.objects.select_related("case").filter(
            figure_id__in={r.figure for r in rules + protecting}
        )
    }

    def describe(rule: ScopeRule) -> dict[str, Any]:
        figure = figures.get(rule.figure)
        return {
            "key": rule.key,
            "figure": rule.figure,
            "figure_value": figure_number(figure.value) if figure else None,
            "figure_words": figure_words(figure.value, figure.unit, figure.scope) if figure else "",
            "figure_unit": figure.unit if figure else "",
            "figure_scope": figure.scope if figure else "",
            "figure_case": figure.case.key if figure else "",
            "case": rule.case,
            "reason": rule.reason,
        }

    document = case_document_or_none(key) or {"relations": []}
    incoming = incoming_relations(key)
    return {
        "forbidden_here": [describe(r) for r in rules],
        "protecting_own": [describe(r) for r in protecting],
        "relations": document["relations"],
        "incoming": incoming,
    }


def incoming_relations(key: str) -> list[dict[str, Any]]:
    """The one-way relations other cases hold to case ``key``, by case and kind: one query."""
    return [
        {"case": r.case.key, "kind": r.kind, "note": r.note}
        for r in Relation.objects.select_related("case")
        .filter(other__key=key)
        .exclude(kind__in=SYMMETRIC_RELATIONS)
        .order_by("case__key", "kind")
    ]


def scope_of_document(document: dict[str, Any]) -> dict[str, Any]:
    """``case_scope`` for a case document already in hand (the live one or a snapshot), from
    the working state. Three queries. See ``scope_sections`` for what it holds."""
    key = document["key"]
    own = [f["id"] for f in document["figures"]]
    rules = list(
        ScopeRule.objects.filter(status="active")
        .filter(Q(case=key) | Q(figure__in=own))
        .order_by("key")
        .values("key", "figure", "case", "reason")
    )
    wanted = {r["figure"] for r in rules} | {a["figure"] for a in document["attributions"]}
    incoming = incoming_relations(key)
    return scope_sections(document, rules, figures_by_id(wanted), incoming)


def figure_row(figure: dict[str, Any], case_key: str) -> dict[str, Any]:
    """A figure as the pages show it: its document fields and the key of its case."""
    fields = ("id", "value", "unit", "measure", "scope", "description")
    return {**{name: figure[name] for name in fields}, "case": case_key}


def figures_by_id(figure_ids: set[str] | list[str]) -> dict[str, dict[str, Any]]:
    """The named figures of the working state (``figure_row``), by ID. One query."""
    return {
        f.figure_id: figure_row(
            {
                "id": f.figure_id,
                "value": figure_number(f.value),
                "unit": f.unit,
                "measure": f.measure,
                "scope": f.scope,
                "description": f.description,
            },
            f.case.key,
        )
        for f in Figure.objects.select_related("case").filter(figure_id__in=set(figure_ids))
    }


def scope_sections(
    document: dict[str, Any],
    rules: Sequence[Mapping[str, Any]],
    figures: dict[str, dict[str, Any]],
    incoming: list[dict[str, Any]],
) -> dict[str, Any]:
    """The record page's Scope section of a case document, from the active rules that name
    the case or its figures (``{"key", "figure", "case", "reason"}``, by key), the figures
    they and the document's attributions name (``figure_row``) and the directed relations
    of other cases pointing at it — read from the working state or from a release.

    ``forbidden_here``: rules naming this case, each with the figure it protects;
    ``protecting_own``: rules keeping this case's figures from other cases; ``figures``;
    ``relations``: the document's own; ``incoming``.
    """
    key = document["key"]
    own = {f["id"] for f in document["figures"]}

    def describe(rule: Mapping[str, Any]) -> dict[str, Any]:
        figure = figures.get(rule["figure"])
        return {
            "key": rule["key"],
            "figure": rule["figure"],
            "figure_value": figure["value"] if figure else None,
            "figure_words": figure_words(figure["value"], figure["unit"], figure["scope"])
            if figure
            else "",
            "figure_unit": figure["unit"] if figure else "",
            "figure_scope": figure["scope"] if figure else "",
            "figure_case": figure["case"] if figure else "",
            "case": rule["case"],
            "reason": rule["reason"],
        }

    return {
        "forbidden_here": [describe(r) for r in rules if r["case"] == key],
        "protecting_own": [describe(r) for r in rules if r["figure"] in own and r["case"] != key],
        "figures": figures,
        "relations": document["relations"],
        "incoming": incoming,
    }


def figures_of_other_cases(case_key: str) -> QuerySet[Figure]:
    """Figures an attribution could name: those of every other case."""
    return (
        Figure.objects.select_related("case")
        .exclude(case__key=case_key)
        .order_by("case__key", "position")
    )


def all_figures() -> QuerySet[Figure]:
    return Figure.objects.select_related("case").order_by("case__key", "position")


def forbidding_rules(case_key: str) -> dict[str, str]:
    """Figures the active non-attribution rules keep from a case: figure ID → rule key."""
    rules = ScopeRule.objects.filter(
        case=case_key, kind="non_attribution", status="active"
    ).values_list("figure", "key")
    forbidden: dict[str, str] = {}
    for figure_id, key in rules.order_by("key"):
        forbidden.setdefault(figure_id, key)
    return forbidden
