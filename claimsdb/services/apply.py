"""Write validated documents into the live tables. Called only by ``services.writer``."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db.models import F, Q

from claimsdb.choices import SYMMETRIC_RELATIONS
from claimsdb.models import (
    Assessment,
    AssessmentMethod,
    Attribution,
    Case,
    CaseTag,
    Claim,
    ClaimIdReservation,
    Control,
    EvidenceLink,
    Figure,
    Relation,
    ReproductionRun,
    ScopeRule,
    Source,
    Unknown,
)

from . import search_index


def parse_date(value: str | None) -> dt.date | None:
    return dt.date.fromisoformat(value) if value else None


def apply_method(document: dict[str, Any]) -> AssessmentMethod:
    method, _ = AssessmentMethod.objects.update_or_create(
        key=document["key"],
        defaults={
            "title": document["title"],
            "dimensions": document["dimensions"],
            "impact": document["impact"],
            "status": document["status"],
        },
    )
    return method


def apply_source(document: dict[str, Any]) -> Source:
    source, _ = Source.objects.update_or_create(
        key=document["key"],
        defaults={
            "title": document["title"],
            "kind": document["kind"],
            "publisher": document["publisher"],
            "url": document["url"],
            "published_on": parse_date(document["published_on"]),
            "accessed_on": parse_date(document["accessed_on"]),
            "reliability": document["reliability"],
            "notes": document["notes"],
            "status": document["status"],
        },
    )
    search_index.index_source(document)
    return source


def apply_rule(document: dict[str, Any]) -> ScopeRule:
    rule, _ = ScopeRule.objects.update_or_create(
        key=document["key"],
        defaults={
            "kind": document["kind"],
            "status": document["status"],
            "figure": document["figure"],
            "case": document["case"],
            "reason": document["reason"],
        },
    )
    return rule


def apply_case_content(document: dict[str, Any], *, restore_runs: bool) -> Case:
    """Everything of a case but its attributions and relations (which may name cases and
    figures written later in the same bundle)."""
    case, _ = Case.objects.update_or_create(
        key=document["key"],
        defaults={
            name: document[name]
            for name in ("title", "status", "summary", "scope_note", "account", "basis", "limits")
        },
    )
    CaseTag.objects.filter(case=case).delete()
    CaseTag.objects.bulk_create(CaseTag(case=case, name=name) for name in document["tags"])

    Claim.objects.filter(case=case).delete()
    claims = Claim.objects.bulk_create(
        Claim(
            case=case,
            claim_id=c["id"],
            position=index,
            statement=c["statement"],
            status=c["status"],
            status_note=c["status_note"],
            basis=c["basis"],
            origin=c["origin"],
        )
        for index, c in enumerate(document["claims"])
    )
    claims_by_id = {c.claim_id: c for c in Claim.objects.filter(case=case)}
    sources = dict(
        Source.objects.filter(
            key__in={e["source"] for c in document["claims"] for e in c["evidence"]}
        ).values_list("key", "pk")
    )
    EvidenceLink.objects.bulk_create(
        EvidenceLink(
            claim=claims_by_id[c["id"]],
            position=index,
            source_id=sources[e["source"]],
            relation=e["relation"],
            locator=e["locator"],
        )
        for c in document["claims"]
        for index, e in enumerate(c["evidence"])
    )
    ClaimIdReservation.objects.bulk_create(
        [ClaimIdReservation(claim_id=c.claim_id, case_key=case.key) for c in claims],
        ignore_conflicts=True,
    )

    methods = dict(
        AssessmentMethod.objects.filter(
            key__in={a["method"] for a in document["assessments"]}
        ).values_list("key", "pk")
    )
    Assessment.objects.filter(case=case).delete()
    Assessment.objects.bulk_create(
        Assessment(
            case=case,
            position=index,
            method_id=methods[a["method"]],
            assessed_on=parse_date(a["assessed_on"]),
            assessor=a["assessor"],
            values=a["values"],
            impact=a["impact"],
            impact_ungraded_reason=a["impact_ungraded_reason"],
            narrative=a["narrative"],
            basis_claims=a["evidence_basis"]["claims"],
            basis_sources=a["evidence_basis"]["sources"],
        )
        for index, a in enumerate(document["assessments"])
    )
    for model, name in ((Control, "controls"), (Unknown, "unknowns")):
        model.objects.filter(case=case).delete()
        model.objects.bulk_create(
            model(case=case, position=index, kind=item["kind"], text=item["text"])
            for index, item in enumerate(document[name])
        )
    _apply_figures(case, document["figures"])
    if restore_runs:
        _restore_runs(case, document["reproduction_runs"])
    search_index.index_case(document)
    return case


def _apply_figures(case: Case, figures: list[dict[str, Any]]) -> None:
    """Figures are updated in place: other cases' attributions and rules point at them."""
    wanted = {f["id"] for f in figures}
    Figure.objects.filter(case=case).exclude(figure_id__in=wanted).delete()
    # move existing rows out of the way of the (case, position) constraint first
    Figure.objects.filter(case=case).update(position=F("position") + 1_000_000)
    existing = {f.figure_id: f for f in Figure.objects.filter(case=case)}
    for index, f in enumerate(figures):
        values = {
            "position": index,
            "value": f["value"],
            "unit": f["unit"],
            "measure": f["measure"],
            "scope": f["scope"],
            "description": f["description"],
            "claims": f["claims"],
        }
        if f["id"] in existing:
            Figure.objects.filter(pk=existing[f["id"]].pk).update(**values)
        else:
            Figure.objects.create(case=case, figure_id=f["id"], **values)


def _restore_runs(case: Case, runs: list[dict[str, Any]]) -> None:
    """Recreate run summaries of a case restored into a knowledge base that lacks them."""
    for summary in runs:
        ReproductionRun.objects.get_or_create(
            run_id=summary["run_id"],
            defaults={
                "case": case,
                "file_sha256": summary.get("sha256", ""),
                "summary": summary,
                "started_at": summary.get("started_at"),
            },
        )


def relation_partners(case_key: str) -> set[str]:
    """Cases whose documents show a relation with this one (symmetric kinds)."""
    partners = set()
    for case, other, kind in Relation.objects.filter(
        Q(case__key=case_key) | Q(other__key=case_key)
    ).values_list("case__key", "other__key", "kind"):
        if kind in SYMMETRIC_RELATIONS:
            partners.add(other if case == case_key else case)
    return partners


def apply_case_links(case: Case, document: dict[str, Any]) -> None:
    """Attributions and relations: written once every case of the change exists."""
    Attribution.objects.filter(case=case).delete()
    Attribution.objects.bulk_create(
        Attribution(
            case=case, position=index, figure_id=a["figure"], role=a["role"], note=a["note"]
        )
        for index, a in enumerate(document["attributions"])
    )
    # the relations this document speaks for: symmetric ones either way, directed ones from it
    Relation.objects.filter(
        Q(case=case) | Q(other=case, kind__in=list(SYMMETRIC_RELATIONS))
    ).delete()
    others = dict(
        Case.objects.filter(key__in={r["case"] for r in document["relations"]}).values_list(
            "key", "pk"
        )
    )
    rows = []
    for r in document["relations"]:
        subject, obj = case.pk, others[r["case"]]
        if r["kind"] in SYMMETRIC_RELATIONS and r["case"] < case.key:
            subject, obj = obj, subject
        rows.append(Relation(case_id=subject, other_id=obj, kind=r["kind"], note=r["note"]))
    Relation.objects.bulk_create(rows)
