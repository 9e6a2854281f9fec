"""Write validated documents into the live tables. Called only by ``services.writer``."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db.models import F, Model, Q

from claimsdb.choices import SYMMETRIC_RELATIONS
from claimsdb.lookalike import skeleton
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
from .rows import insert_rows


def parse_date(value: str | None) -> dt.date | None:
    return dt.date.fromisoformat(value) if value else None


_BULK = 250  # rows per UPDATE … CASE statement of bulk_update


def apply_methods(documents: list[dict[str, Any]]) -> None:
    _upsert(
        AssessmentMethod,
        {
            d["key"]: {
                "title": d["title"],
                "dimensions": d["dimensions"],
                "impact": d["impact"],
                "status": d["status"],
            }
            for d in documents
        },
    )


def apply_sources(documents: list[dict[str, Any]]) -> None:
    _upsert(
        Source,
        {
            d["key"]: {
                "title": d["title"],
                "kind": d["kind"],
                "publisher": d["publisher"],
                "url": d["url"],
                "published_on": parse_date(d["published_on"]),
                "accessed_on": parse_date(d["accessed_on"]),
                "reliability": d["reliability"],
                "notes": d["notes"],
                "status": d["status"],
            }
            for d in documents
        },
    )
    search_index.index_sources(documents)


def apply_rules(documents: list[dict[str, Any]]) -> None:
    _upsert(
        ScopeRule,
        {
            d["key"]: {
                "kind": d["kind"],
                "status": d["status"],
                "figure": d["figure"],
                "case": d["case"],
                "reason": d["reason"],
            }
            for d in documents
        },
    )


def _upsert(model: type[Model], rows: dict[str, dict[str, Any]]) -> dict[str, Model]:
    """Create or update records by key in three queries: read, insert, update.

    Rows whose values already match are left alone.
    """
    if not rows:
        return {}
    existing = {obj.key: obj for obj in model.objects.filter(key__in=list(rows))}
    created, changed = [], []
    for key, values in rows.items():
        obj = existing.get(key)
        if obj is None:
            # every record kind's row keeps its key's skeleton, for look-alike keys
            created.append(model(key=key, key_skeleton=skeleton(key), **values))
            continue
        if any(getattr(obj, name) != value for name, value in values.items()):
            for name, value in values.items():
                setattr(obj, name, value)
            changed.append(obj)
    insert_rows(model, created)
    if any(obj.pk is None for obj in created):  # inserted without returning primary keys
        existing.update(
            model.objects.filter(key__in=[obj.key for obj in created]).in_bulk(field_name="key")
        )
    else:
        existing.update((obj.key, obj) for obj in created)
    if changed:
        fields = list(next(iter(rows.values())))
        model.objects.bulk_update(changed, fields, batch_size=_BULK)
    return existing


_CASE_FIELDS = ("title", "status", "summary", "scope_note", "account", "basis", "limits")


def apply_case_contents(
    documents: list[dict[str, Any]], *, current: dict[str, dict[str, Any] | None]
) -> dict[str, Case]:
    """Everything of the cases but their attributions and relations (which may name cases and
    figures written later in the same change), in a fixed number of queries.

    ``current`` holds each case's live document (None for a new case). A section a document
    lists in full (tags, claims, assessments…) is rewritten only where it differs from the
    live one, so an edit of a title writes one row; new cases get their reproduction runs
    restored.
    """
    cases: dict[str, Case] = _upsert(
        Case, {d["key"]: {name: d[name] for name in _CASE_FIELDS} for d in documents}
    )

    def changed(section: str) -> tuple[list[dict[str, Any]], list[int]]:
        """The documents whose ``section`` differs, and the pks of those cases that exist."""
        differ = [
            d
            for d in documents
            if current[d["key"]] is None or current[d["key"]][section] != d[section]
        ]
        return differ, [cases[d["key"]].pk for d in differ if current[d["key"]] is not None]

    tagged, old = changed("tags")
    CaseTag.objects.filter(case_id__in=old).delete()
    insert_rows(
        CaseTag,
        [CaseTag(case=cases[d["key"]], name=name) for d in tagged for name in d["tags"]],
    )
    claimed, old = changed("claims")
    Claim.objects.filter(case_id__in=old).delete()  # the cascade takes the evidence links
    _apply_claims(cases, claimed)
    assessed, old = changed("assessments")
    Assessment.objects.filter(case_id__in=old).delete()
    _apply_assessments(cases, assessed)
    for model, name in ((Control, "controls"), (Unknown, "unknowns")):
        listed, old = changed(name)
        model.objects.filter(case_id__in=old).delete()
        insert_rows(
            model,
            [
                model(case=cases[d["key"]], position=index, kind=item["kind"], text=item["text"])
                for d in listed
                for index, item in enumerate(d[name])
            ],
        )
    _apply_figures(cases, *changed("figures"))
    _restore_runs(cases, [d for d in documents if current[d["key"]] is None])
    search_index.index_cases(
        [
            d
            for d in documents
            if current[d["key"]] is None
            or any(current[d["key"]][name] != d[name] for name in search_index.CASE_FIELDS)
        ]
    )
    return cases


def _apply_claims(cases: dict[str, Case], documents: list[dict[str, Any]]) -> None:
    if not documents:
        return
    claims = insert_rows(
        Claim,
        [
            Claim(
                case=cases[d["key"]],
                claim_id=c["id"],
                position=index,
                statement=c["statement"],
                status=c["status"],
                status_note=c["status_note"],
                basis=c["basis"],
                origin=c["origin"],
            )
            for d in documents
            for index, c in enumerate(d["claims"])
        ],
    )
    if any(claim.pk is None for claim in claims):  # inserted without returning primary keys
        claim_pks = dict(
            Claim.objects.filter(case_id__in={c.case_id for c in claims}).values_list(
                "claim_id", "pk"
            )
        )
    else:
        claim_pks = {claim.claim_id: claim.pk for claim in claims}
    source_pks = dict(
        Source.objects.filter(
            key__in={e["source"] for d in documents for c in d["claims"] for e in c["evidence"]}
        ).values_list("key", "pk")
    )
    insert_rows(
        EvidenceLink,
        [
            EvidenceLink(
                claim_id=claim_pks[c["id"]],
                position=index,
                source_id=source_pks[e["source"]],
                relation=e["relation"],
                locator=e["locator"],
            )
            for d in documents
            for c in d["claims"]
            for index, e in enumerate(c["evidence"])
        ],
    )
    ClaimIdReservation.objects.bulk_create(
        [
            ClaimIdReservation(claim_id=c["id"], case_key=d["key"])
            for d in documents
            for c in d["claims"]
        ],
        ignore_conflicts=True,
    )


def _apply_assessments(cases: dict[str, Case], documents: list[dict[str, Any]]) -> None:
    if not documents:
        return
    methods = dict(
        AssessmentMethod.objects.filter(
            key__in={a["method"] for d in documents for a in d["assessments"]}
        ).values_list("key", "pk")
    )
    insert_rows(
        Assessment,
        [
            Assessment(
                case=cases[d["key"]],
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
            for d in documents
            for index, a in enumerate(d["assessments"])
        ],
    )


_FIGURE_FIELDS = ("position", "value", "unit", "measure", "scope", "description", "claims")


def _apply_figures(cases: dict[str, Case], documents: list[dict[str, Any]], old: list[int]) -> None:
    """Figures are updated in place: other cases' attributions and rules point at them."""
    existing: dict[str, Figure] = {}
    if old:
        wanted = {f["id"] for d in documents for f in d["figures"]}
        existing = {f.figure_id: f for f in Figure.objects.filter(case_id__in=old)}
        removed = [f.pk for f in existing.values() if f.figure_id not in wanted]
        if removed:
            Figure.objects.filter(pk__in=removed).delete()
        # move the kept rows out of the way of the (case, position) constraint first
        Figure.objects.filter(case_id__in=old).update(position=F("position") + 1_000_000)
    created, changed = [], []
    for d in documents:
        for index, f in enumerate(d["figures"]):
            values = {
                "position": index,
                "value": f["value"],
                "unit": f["unit"],
                "measure": f["measure"],
                "scope": f["scope"],
                "description": f["description"],
                "claims": f["claims"],
            }
            figure = existing.get(f["id"])
            if figure is None:
                created.append(
                    Figure(
                        case=cases[d["key"]],
                        figure_id=f["id"],
                        id_skeleton=skeleton(f["id"]),
                        **values,
                    )
                )
            else:
                for name, value in values.items():
                    setattr(figure, name, value)
                changed.append(figure)
    if changed:
        Figure.objects.bulk_update(changed, _FIGURE_FIELDS, batch_size=_BULK)
    insert_rows(Figure, created)


def _restore_runs(cases: dict[str, Case], documents: list[dict[str, Any]]) -> None:
    """Recreate run summaries of cases restored into a knowledge base that lacks them."""
    runs = {s["run_id"]: (d["key"], s) for d in documents for s in d["reproduction_runs"]}
    if not runs:
        return
    present = set(
        ReproductionRun.objects.filter(run_id__in=list(runs)).values_list("run_id", flat=True)
    )
    insert_rows(
        ReproductionRun,
        [
            ReproductionRun(
                run_id=run_id,
                case=cases[key],
                file_sha256=summary.get("sha256", ""),
                summary=summary,
                started_at=summary.get("started_at"),
            )
            for run_id, (key, summary) in runs.items()
            if run_id not in present
        ],
    )


def apply_case_links(
    cases: dict[str, Case],
    documents: list[dict[str, Any]],
    *,
    current: dict[str, dict[str, Any] | None],
) -> set[str]:
    """Attributions and relations, written once every case of the change exists.

    Returns the cases whose documents show a symmetric relation that changed."""
    attributing = [
        d
        for d in documents
        if current[d["key"]] is None or current[d["key"]]["attributions"] != d["attributions"]
    ]
    old = [cases[d["key"]].pk for d in attributing if current[d["key"]] is not None]
    if old:
        Attribution.objects.filter(case_id__in=old).delete()
    insert_rows(
        Attribution,
        [
            Attribution(
                case=cases[d["key"]],
                position=index,
                figure_id=a["figure"],
                role=a["role"],
                note=a["note"],
            )
            for d in attributing
            for index, a in enumerate(d["attributions"])
        ],
    )
    return _apply_relations(cases, documents, [cases[d["key"]].pk for d in documents])


Triple = tuple[int, int, str]


def _apply_relations(
    cases: dict[str, Case], documents: list[dict[str, Any]], ids: list[int]
) -> set[str]:
    """Each document speaks for its relations: symmetric ones either way, directed ones from
    it. Documents are applied one after the other, in memory, as if each replaced its
    relations in turn; then only the rows that differ are deleted and inserted.

    Returns the keys of the cases on either side of a symmetric relation that changed: the
    only cases other than the written ones whose documents this can change.
    """
    before: dict[Triple, tuple[int, str]] = {}
    keys = {case.pk: key for key, case in cases.items()}
    for pk, case, other, kind, note, case_key, other_key in Relation.objects.filter(
        Q(case_id__in=ids) | Q(other_id__in=ids)
    ).values_list("pk", "case_id", "other_id", "kind", "note", "case__key", "other__key"):
        before[(case, other, kind)] = (pk, note)
        keys[case], keys[other] = case_key, other_key
    pks = {key: case.pk for key, case in cases.items()}
    targets = {r["case"] for d in documents for r in d["relations"]} - set(pks)
    if targets:
        pks.update(Case.objects.filter(key__in=targets).values_list("key", "pk"))
    keys.update((pk, key) for key, pk in pks.items())
    after: dict[Triple, str] = {triple: note for triple, (_, note) in before.items()}
    touching: dict[int, set[Triple]] = {}
    for triple in after:
        touching.setdefault(triple[0], set()).add(triple)
        touching.setdefault(triple[1], set()).add(triple)
    for d in documents:
        subject = pks[d["key"]]
        for triple in list(touching.get(subject, ())):
            case, other, kind = triple
            if case == subject or (other == subject and kind in SYMMETRIC_RELATIONS):
                del after[triple]
                touching[case].discard(triple)
                touching[other].discard(triple)
        for r in d["relations"]:
            case, other = subject, pks[r["case"]]
            if r["kind"] in SYMMETRIC_RELATIONS and r["case"] < d["key"]:
                case, other = other, case
            triple = (case, other, r["kind"])
            after[triple] = r["note"]
            touching.setdefault(case, set()).add(triple)
            touching.setdefault(other, set()).add(triple)
    stale = {triple for triple, (_, note) in before.items() if after.get(triple) != note}
    fresh = {triple for triple, note in after.items() if triple not in before or triple in stale}
    if stale:
        Relation.objects.filter(pk__in=[before[triple][0] for triple in stale]).delete()
    insert_rows(
        Relation,
        [
            Relation(case_id=case, other_id=other, kind=kind, note=after[(case, other, kind)])
            for case, other, kind in fresh
        ],
    )
    return {
        keys[pk]
        for case, other, kind in stale | fresh
        if kind in SYMMETRIC_RELATIONS
        for pk in (case, other)
    }
