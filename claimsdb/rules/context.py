"""What a field rule may know about the database: preloaded in a fixed number of queries."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from claimsdb.models import (
    AssessmentMethod,
    Attribution,
    Case,
    Claim,
    ClaimIdReservation,
    Figure,
    ScopeRule,
    Source,
)


@dataclass
class DocumentContext:
    """The records a document refers to, looked up once before its rules run."""

    kind: str
    key: str
    exists: bool
    action: str
    sources: set[str] = field(default_factory=set)
    methods: dict[str, AssessmentMethod] = field(default_factory=dict)
    cases: set[str] = field(default_factory=set)
    # claim ID → case key, for every ID ever used (reservations outlive their claims)
    reserved_claims: dict[str, str] = field(default_factory=dict)
    live_claims: dict[str, str] = field(default_factory=dict)
    # figure ID → owning case key
    figures: dict[str, str] = field(default_factory=dict)
    # figures of this case still attributed by other cases, or named by active rules
    figures_in_use: dict[str, str] = field(default_factory=dict)
    current_runs: list[dict[str, Any]] | None = None
    method_in_use: bool = False


def case_context(document: dict[str, Any], *, action: str, current_runs) -> DocumentContext:
    key = document["key"]
    claim_ids = [c["id"] for c in document["claims"]]
    figure_refs = {a["figure"] for a in document["attributions"]} | {
        f["id"] for f in document["figures"]
    }
    figure_claims = {c for f in document["figures"] for c in f["claims"]}
    source_refs = {e["source"] for c in document["claims"] for e in c["evidence"]} | {
        s for a in document["assessments"] for s in a["evidence_basis"]["sources"]
    }
    context = DocumentContext(
        kind="case",
        key=key,
        exists=current_runs is not None,
        action=action,
        current_runs=current_runs,
    )
    context.sources = set(Source.objects.filter(key__in=source_refs).values_list("key", flat=True))
    context.methods = {
        m.key: m
        for m in AssessmentMethod.objects.filter(
            key__in={a["method"] for a in document["assessments"]}
        )
    }
    context.cases = set(
        Case.objects.filter(key__in={r["case"] for r in document["relations"]}).values_list(
            "key", flat=True
        )
    )
    context.reserved_claims = dict(
        ClaimIdReservation.objects.filter(claim_id__in=claim_ids).values_list(
            "claim_id", "case_key"
        )
    )
    context.live_claims = dict(
        Claim.objects.filter(claim_id__in=set(claim_ids) | figure_claims).values_list(
            "claim_id", "case__key"
        )
    )
    context.figures = dict(
        Figure.objects.filter(figure_id__in=figure_refs).values_list("figure_id", "case__key")
    )
    if context.exists:
        kept = {f["id"] for f in document["figures"]}
        for figure_id, other in (
            Attribution.objects.filter(figure__case__key=key)
            .exclude(case__key=key)
            .exclude(figure_id__in=kept)
            .values_list("figure_id", "case__key")
        ):
            context.figures_in_use.setdefault(figure_id, f"attributed by case {other}")
        for figure_id, rule_key in (
            ScopeRule.objects.filter(
                status="active", figure__in=Figure.objects.filter(case__key=key).values("figure_id")
            )
            .exclude(figure__in=kept)
            .values_list("figure", "key")
        ):
            context.figures_in_use.setdefault(figure_id, f"named by scope rule {rule_key}")
    return context
