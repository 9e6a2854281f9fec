"""What a field rule may know about the database: preloaded in a fixed number of queries."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from django.db.models import F, QuerySet

from claimsdb.models import (
    AssessmentMethod,
    Attribution,
    Case,
    Claim,
    ClaimIdReservation,
    Component,
    Figure,
    ScopeRule,
    Source,
)
from claimsdb.records.batched import CompiledQuery, compiled_among, fetch_together


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
    # component key → what the rules need of it, for the components the document names
    components: dict[str, ComponentFacts] = field(default_factory=dict)
    # a component being withdrawn: the cases whose affected entries name it
    component_cases: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ComponentFacts:
    """What a field rule needs of a component a document names."""

    status: str
    version_scheme: str

    @classmethod
    def of(cls, document: dict[str, Any]) -> ComponentFacts:
        return cls(document["status"], document["version_scheme"])


def component_facts(keys: set[str]) -> dict[str, ComponentFacts]:
    """The components among ``keys`` that exist: one query (none for no keys)."""
    if not keys:
        return {}
    return {
        key: ComponentFacts(status, scheme)
        for key, status, scheme in Component.objects.filter(key__in=keys).values_list(
            "key", "status", "version_scheme"
        )
    }


def case_context(
    document: dict[str, Any], *, action: str, current_runs: list[dict[str, Any]] | None
) -> DocumentContext:
    """The context of one case document (see ``case_contexts``)."""
    (context,) = case_contexts([CaseContextRequest(document, action, current_runs)])
    return context


@dataclass
class CaseContextRequest:
    """A case document whose context is wanted; ``current_runs`` is None for a new case."""

    document: dict[str, Any]
    action: str
    current_runs: list[dict[str, Any]] | None


@dataclass
class _CaseRefs:
    """What one case document names, and so what its context holds."""

    claim_ids: set[str]
    figure_refs: set[str]
    figure_claims: set[str]
    sources: set[str]
    methods: set[str]
    cases: set[str]
    components: set[str]

    @classmethod
    def of(cls, document: dict[str, Any]) -> _CaseRefs:
        return cls(
            claim_ids={c["id"] for c in document["claims"]},
            figure_refs={a["figure"] for a in document["attributions"]}
            | {f["id"] for f in document["figures"]},
            figure_claims={c for f in document["figures"] for c in f["claims"]},
            sources={e["source"] for c in document["claims"] for e in c["evidence"]}
            | {s for a in document["assessments"] for s in a["evidence_basis"]["sources"]},
            methods={a["method"] for a in document["assessments"]},
            cases={r["case"] for r in document["relations"]},
            components={a["component"] for a in document.get("affected", [])},
        )


def case_contexts(requests: list[CaseContextRequest]) -> list[DocumentContext]:
    """The contexts of many case documents, looked up together: a fixed number of queries
    however many documents, each context holding only what its own document names."""
    refs = [_CaseRefs.of(r.document) for r in requests]
    every = _CaseRefs(*(set().union(*(getattr(r, name) for r in refs)) for name in _REF_FIELDS))
    case_keys = {r.document["key"] for r in requests if r.current_runs is not None}
    # each put together once per process (``compiled_among``) but the methods (models)
    found = fetch_together(
        {
            "sources": compiled_among(
                "context.sources",
                Source,
                lambda keys: Source.objects.filter(key__among=keys).values_list("key"),
                every.sources,
            ),
            "methods": AssessmentMethod.objects.filter(key__in=every.methods),
            "cases": compiled_among(
                "context.cases",
                Case,
                lambda keys: Case.objects.filter(key__among=keys).values_list("key"),
                every.cases,
            ),
            "reserved": compiled_among(
                "context.reserved",
                ClaimIdReservation,
                lambda ids: ClaimIdReservation.objects.filter(claim_id__among=ids).values_list(
                    "claim_id", "case_key"
                ),
                every.claim_ids,
            ),
            "live": compiled_among(
                "context.live",
                Claim,
                lambda ids: Claim.objects.filter(claim_id__among=ids).values_list(
                    "claim_id", "case__key"
                ),
                every.claim_ids | every.figure_claims,
            ),
            "figures": compiled_among(
                "context.figures",
                Figure,
                lambda ids: Figure.objects.filter(figure_id__among=ids).values_list(
                    "figure_id", "case__key"
                ),
                every.figure_refs,
            ),
            **_figures_in_use_queries(case_keys),
        }
    )
    components = component_facts(every.components)
    sources = {key for (key,) in found["sources"]}
    methods = {m.key: m for m in found["methods"]}
    cases = {key for (key,) in found["cases"]}
    reserved = dict(found["reserved"])
    live = dict(found["live"])
    figures = dict(found["figures"])
    in_use = _figures_in_use(found) if case_keys else {}
    contexts = []
    for request, own in zip(requests, refs, strict=True):
        key = request.document["key"]
        context = DocumentContext(
            kind="case",
            key=key,
            exists=request.current_runs is not None,
            action=request.action,
            current_runs=request.current_runs,
        )
        context.sources = own.sources & sources
        context.methods = {k: methods[k] for k in own.methods if k in methods}
        context.cases = own.cases & cases
        context.components = {k: components[k] for k in own.components if k in components}
        context.reserved_claims = {c: reserved[c] for c in own.claim_ids if c in reserved}
        context.live_claims = {c: live[c] for c in own.claim_ids | own.figure_claims if c in live}
        context.figures = {f: figures[f] for f in own.figure_refs if f in figures}
        if context.exists:
            kept = {f["id"] for f in request.document["figures"]}
            for figure_id, user in in_use.get(key, []):
                if figure_id not in kept:
                    context.figures_in_use.setdefault(figure_id, user)
        contexts.append(context)
    return contexts


_REF_FIELDS = (
    "claim_ids",
    "figure_refs",
    "figure_claims",
    "sources",
    "methods",
    "cases",
    "components",
)


def _figures_in_use_queries(case_keys: set[str]) -> dict[str, CompiledQuery]:
    """The queries of ``_figures_in_use``: the attributions by other cases of the figures
    of ``case_keys``, those figures' owners, and the active rules naming them."""
    if not case_keys:
        return {}

    def owned(keys: Any) -> QuerySet[Any]:
        return Figure.objects.filter(case__key__among=keys)

    return {
        # figure_id is the figure's ID, not its primary key (see state.attribution_rows)
        "in_use.attributions": compiled_among(
            "context.in_use.attributions",
            Attribution,
            lambda keys: (
                Attribution.objects.filter(figure__case__key__among=keys)
                .exclude(case__key=F("figure__case__key"))
                .values_list("figure_id", "figure__case__key", "case__key")
            ),
            case_keys,
        ),
        "in_use.owners": compiled_among(
            "context.in_use.owners",
            Figure,
            lambda keys: owned(keys).values_list("figure_id", "case__key"),
            case_keys,
        ),
        "in_use.rules": compiled_among(
            "context.in_use.rules",
            ScopeRule,
            lambda keys: (
                ScopeRule.objects.filter(
                    status="active", figure__in=owned(keys).values("figure_id")
                )
                .order_by("key")
                .values_list("figure", "key")
            ),
            case_keys,
        ),
    }


def _figures_in_use(found: dict[str, list[Any]]) -> dict[str, list[tuple[str, str]]]:
    """For each case, its figures that other cases attribute or active rules name: the
    attributions first (in their order), then the rules by key (``found``: the results of
    ``_figures_in_use_queries``)."""
    in_use: dict[str, list[tuple[str, str]]] = {}
    attributions = cast("Iterable[tuple[str, str, str]]", found["in_use.attributions"])
    for figure_id, owner, other in attributions:
        in_use.setdefault(owner, []).append((figure_id, f"attributed by case {other}"))
    owners = dict(found["in_use.owners"])
    for figure_id, rule_key in found["in_use.rules"]:
        in_use.setdefault(owners[figure_id], []).append(
            (figure_id, f"named by scope rule {rule_key}")
        )
    return in_use
