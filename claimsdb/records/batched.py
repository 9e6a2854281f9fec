"""Case documents for a whole batch of cases, built from plain rows.

``case_document`` over ``case_queryset`` is the definition of a case's document. Reading
every case that way spends most of its time in the ORM's prefetch machinery (a queryset
per case and relation, a model instance per row); here the same documents come from one
``values_list`` query per relation for the batch, ordered as the models order them, which
makes whole-knowledge-base reads (exports, ``verify_history``, ``check_rules``) several
times faster. tests/test_streaming_commands.py holds the two equal.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.db import connection
from django.db.models import Q
from django.db.models.expressions import RawSQL

from claimsdb.choices import SYMMETRIC_RELATIONS
from claimsdb.models import (
    Assessment,
    Attribution,
    Case,
    CaseTag,
    Claim,
    Control,
    EvidenceLink,
    Figure,
    Relation,
    ReproductionRun,
    Unknown,
)

from .canonical import json_number

# The case row's own fields in a document.
CASE_FIELDS = ("key", "title", "status", "summary", "scope_note", "account", "basis", "limits")


def case_documents(cases: list[Case]) -> list[dict[str, Any]]:
    """The documents of ``cases`` (rows with at least ``CASE_FIELDS``), in their order:
    ten queries, whatever the cases hold."""
    ids = _among([case.pk for case in cases])

    def rows(queryset, *fields: str) -> dict[int, list[tuple]]:
        """Rows of ``queryset`` for the batch, grouped by their case (the first field)."""
        grouped: dict[int, list[tuple]] = defaultdict(list)
        for row in queryset.values_list(*fields):
            grouped[row[0]].append(row[1:])
        return grouped

    by_case = {"case_id__in": ids}
    tags = rows(CaseTag.objects.filter(**by_case), "case_id", "name")
    claims = rows(
        Claim.objects.filter(**by_case).order_by("case_id", "position"),
        "case_id",
        "id",
        "claim_id",
        "statement",
        "status",
        "status_note",
        "basis",
        "origin",
    )
    evidence = rows(
        EvidenceLink.objects.filter(claim__case_id__in=ids).order_by("claim_id", "position"),
        "claim_id",
        "source__key",
        "relation",
        "locator",
    )
    assessments = rows(
        Assessment.objects.filter(**by_case).order_by("case_id", "position"),
        "case_id",
        "method__key",
        "assessed_on",
        "assessor",
        "values",
        "impact",
        "impact_ungraded_reason",
        "narrative",
        "basis_claims",
        "basis_sources",
    )
    controls = rows(
        Control.objects.filter(**by_case).order_by("case_id", "position"), "case_id", "kind", "text"
    )
    unknowns = rows(
        Unknown.objects.filter(**by_case).order_by("case_id", "position"), "case_id", "kind", "text"
    )
    figures = rows(
        Figure.objects.filter(**by_case).order_by("case_id", "position"),
        "case_id",
        "figure_id",
        "value",
        "unit",
        "measure",
        "scope",
        "description",
        "claims",
    )
    attributions = rows(
        Attribution.objects.filter(**by_case).order_by("case_id", "position"),
        "case_id",
        "figure_id",
        "role",
        "note",
    )
    # one query for both directions: the batch's own relations, and the symmetric ones
    # other cases hold to it (a relation between two cases of the batch counts for both)
    batch = {case.pk for case in cases}
    relations_out: dict[int, list[tuple]] = defaultdict(list)
    relations_in: dict[int, list[tuple]] = defaultdict(list)
    for case_id, other_id, case_key, other_key, kind, note in Relation.objects.filter(
        Q(case_id__in=ids) | Q(other_id__in=ids, kind__in=SYMMETRIC_RELATIONS)
    ).values_list("case_id", "other_id", "case__key", "other__key", "kind", "note"):
        if case_id in batch:
            relations_out[case_id].append((other_key, kind, note))
        if other_id in batch and kind in SYMMETRIC_RELATIONS:
            relations_in[other_id].append((case_key, kind, note))
    runs = rows(ReproductionRun.objects.filter(**by_case), "case_id", "summary")

    documents = []
    for case in cases:
        relations = [
            {"case": other, "kind": kind, "note": note}
            for other, kind, note in _chain(relations_out[case.pk], relations_in[case.pk])
        ]
        relations.sort(key=lambda r: (r["case"], r["kind"]))
        documents.append(
            {
                "format": "claimsdb.case/1",
                "key": case.key,
                "title": case.title,
                "status": case.status,
                "summary": case.summary,
                "scope_note": case.scope_note,
                "account": case.account,
                "basis": case.basis,
                "limits": case.limits,
                "tags": sorted(name for (name,) in tags[case.pk]),
                "claims": [
                    {
                        "id": claim_id,
                        "statement": statement,
                        "status": status,
                        "status_note": status_note,
                        "basis": basis,
                        "origin": origin,
                        "evidence": [
                            {"source": source, "relation": relation, "locator": locator}
                            for source, relation, locator in evidence[pk]
                        ],
                    }
                    for pk, claim_id, statement, status, status_note, basis, origin in claims[
                        case.pk
                    ]
                ],
                "assessments": [
                    {
                        "method": method,
                        "assessed_on": assessed_on.isoformat(),
                        "assessor": assessor,
                        "values": dict(values),
                        "impact": impact,
                        "impact_ungraded_reason": ungraded,
                        "narrative": narrative,
                        "evidence_basis": {
                            "claims": sorted(basis_claims),
                            "sources": sorted(basis_sources),
                        },
                    }
                    for (
                        method,
                        assessed_on,
                        assessor,
                        values,
                        impact,
                        ungraded,
                        narrative,
                        basis_claims,
                        basis_sources,
                    ) in assessments[case.pk]
                ],
                "controls": [{"kind": kind, "text": text} for kind, text in controls[case.pk]],
                "unknowns": [{"kind": kind, "text": text} for kind, text in unknowns[case.pk]],
                "figures": [
                    {
                        "id": figure_id,
                        "value": json_number(value),
                        "unit": unit,
                        "measure": measure,
                        "scope": scope,
                        "description": description,
                        "claims": list(figure_claims),
                    }
                    for (
                        figure_id,
                        value,
                        unit,
                        measure,
                        scope,
                        description,
                        figure_claims,
                    ) in figures[case.pk]
                ],
                "attributions": [
                    {"figure": figure, "role": role, "note": note}
                    for figure, role, note in attributions[case.pk]
                ],
                "relations": relations,
                "reproduction_runs": sorted(
                    (summary for (summary,) in runs[case.pk]),
                    key=lambda s: s.get("run_id", ""),
                ),
            }
        )
    return documents


def _among(ids: list[int]) -> Any:
    """What ``…__in`` compares with: on PostgreSQL the batch's keys as one array parameter
    (a query with hundreds of placeholders costs more to put together than to run)."""
    if connection.vendor != "postgresql" or not ids:
        return ids
    return RawSQL("SELECT unnest(%s::bigint[])", [ids])


def _chain(*groups: Iterable[tuple]) -> Iterable[tuple]:
    for group in groups:
        yield from group
