"""Write validated documents into the live tables. Called only by ``services.writer``."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import connection
from django.db.models import F, Model, Q
from django.utils import timezone

from claimsdb.choices import SYMMETRIC_RELATIONS
from claimsdb.lookalike import skeleton
from claimsdb.models import (
    AffectedEntry,
    Assessment,
    AssessmentMethod,
    Attribution,
    Case,
    CaseTag,
    Claim,
    ClaimIdReservation,
    Component,
    ComponentName,
    Control,
    EvidenceLink,
    Figure,
    Relation,
    ReproductionRun,
    ScopeRule,
    Source,
    Unknown,
)
from claimsdb.models.components import fold_name
from claimsdb.records.figures import number_literal

from . import search_index
from .rows import column, insert_rows, insert_tuples, reserve_ids


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


def apply_components(documents: list[dict[str, Any]]) -> None:
    pks = _upsert(
        Component,
        {
            d["key"]: {
                "name": d["name"],
                "kind": d["kind"],
                "purl": d["purl"],
                "version_scheme": d["version_scheme"],
                "homepage": d["homepage"],
                "aliases": d["aliases"],
                "relations": d["relations"],
                "status": d["status"],
            }
            for d in documents
        },
    )
    if not pks:
        return
    search_index.index_components(documents)
    # the names that find a component (``ComponentName``): rewritten with its document
    _delete(ComponentName, "component_id", list(pks.values()))
    insert_tuples(
        ComponentName,
        ("component", "name"),
        [
            (pks[d["key"]], name)
            for d in documents
            for name in sorted({fold_name(n) for n in [d["name"], *d["aliases"]]} - {""})
        ],
    )


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


def _upsert(model: type[Model], rows: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Create or update records by key: one read, one insert, one ``executemany`` update.
    Returns the primary key of every record by key.

    Rows whose values already match are left alone. New rows are inserted as tuples, with
    primary keys taken from the table's sequence where there is one (``rows.reserve_ids``),
    else read back by key.
    """
    if not rows:
        return {}
    names = list(next(iter(rows.values())))
    pks: dict[str, int] = {}
    changed = []
    for pk, key, *values in model._default_manager.filter(key__in=list(rows)).values_list(
        "pk", "key", *names
    ):
        pks[key] = pk
        wanted = rows[key]
        if any(value != wanted[name] for name, value in zip(names, values, strict=True)):
            changed.append((pk, key))
    created = [key for key in rows if key not in pks]
    if created:
        # every record kind's row keeps its key's skeleton, for look-alike keys
        ids = reserve_ids(model, len(created))
        if ids is not None:
            insert_tuples(
                model,
                ["id", "key", "key_skeleton", *names],
                [
                    (pk, key, skeleton(key), *rows[key].values())
                    for pk, key in zip(ids, created, strict=True)
                ],
            )
            pks.update(zip(created, ids, strict=True))
        else:
            insert_tuples(
                model,
                ["key", "key_skeleton", *names],
                [(key, skeleton(key), *rows[key].values()) for key in created],
            )
            pks.update(model._default_manager.filter(key__in=created).values_list("key", "pk"))
    if changed:
        fields = [model._meta.get_field(name) for name in names]
        quote = connection.ops.quote_name
        assignments = ", ".join(f"{quote(column(model, name))} = %s" for name in names)
        with connection.cursor() as cursor:
            cursor.executemany(
                f"UPDATE {quote(model._meta.db_table)} SET {assignments} WHERE id = %s",
                [
                    (
                        *(
                            field.get_db_prep_save(rows[key][field.name], connection)  # type: ignore[union-attr]
                            for field in fields
                        ),
                        pk,
                    )
                    for pk, key in changed
                ],
            )
    return pks


def _delete(model: type[Model], column: str, ids: list[int]) -> None:
    """Delete the rows whose ``column`` is among ``ids``, in one statement and without
    reading them first (Django's delete reads the rows of a model that others cascade
    from; callers delete those others first)."""
    if not ids:
        return
    quote = connection.ops.quote_name
    table, column = quote(model._meta.db_table), quote(column)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"DELETE FROM {table} WHERE {column} = ANY(%s)", [ids])
        else:
            marks = ", ".join(["%s"] * len(ids))
            cursor.execute(f"DELETE FROM {table} WHERE {column} IN ({marks})", ids)


_CASE_FIELDS = ("title", "status", "summary", "scope_note", "account", "basis", "limits")


def apply_case_contents(
    documents: list[dict[str, Any]], *, current: dict[str, dict[str, Any] | None]
) -> dict[str, int]:
    """Everything of the cases but their attributions and relations (which may name cases and
    figures written later in the same change), in a fixed number of queries. Returns the
    cases' primary keys by key.

    ``current`` holds each case's live document (None for a new case). A section a document
    lists in full (tags, claims, assessments…) is rewritten only where it differs from the
    live one, so an edit of a title writes one row; new cases get their reproduction runs
    restored. Rows are built as tuples (``rows.insert_tuples``).
    """
    cases = _upsert(Case, {d["key"]: {name: d[name] for name in _CASE_FIELDS} for d in documents})

    def changed(section: str) -> tuple[list[dict[str, Any]], list[int]]:
        """The documents whose ``section`` differs, and the pks of those cases that exist."""
        differ = [
            d
            for d in documents
            if (live := current[d["key"]]) is None or live[section] != d[section]
        ]
        return differ, [cases[d["key"]] for d in differ if current[d["key"]] is not None]

    tagged, old = changed("tags")
    _delete(CaseTag, "case_id", old)
    insert_tuples(
        CaseTag, ("case", "name"), [(cases[d["key"]], name) for d in tagged for name in d["tags"]]
    )
    claimed, old = changed("claims")
    kept = [d for d in claimed if _same_claims(current[d["key"]], d)]
    _update_claims(kept, current)
    claimed = [d for d in claimed if not _same_claims(current[d["key"]], d)]
    old = [cases[d["key"]] for d in claimed if current[d["key"]] is not None]
    if old:
        EvidenceLink.objects.filter(claim__case_id__in=old).delete()
        _delete(Claim, "case_id", old)
    _apply_claims(cases, claimed)
    assessed, old = changed("assessments")
    _delete(Assessment, "case_id", old)
    _apply_assessments(cases, assessed)
    for model, name in ((Control, "controls"), (Unknown, "unknowns")):
        listed, old = changed(name)
        _delete(model, "case_id", old)
        insert_tuples(
            model,
            ("case", "position", "kind", "text"),
            [
                (cases[d["key"]], index, item["kind"], item["text"])
                for d in listed
                for index, item in enumerate(d[name])
            ],
        )
    _apply_figures(cases, *changed("figures"))
    _apply_affected(cases, documents, current)
    _restore_runs(cases, [d for d in documents if current[d["key"]] is None])
    search_index.index_cases(
        [
            d
            for d in documents
            if (live := current[d["key"]]) is None
            or any(live[name] != d[name] for name in search_index.CASE_FIELDS)
        ]
    )
    return cases


# The fields of a claim row that an edit may change in place.
_CLAIM_TEXT = ("statement", "status", "status_note", "basis", "origin")


def _same_claims(current: dict[str, Any] | None, document: dict[str, Any]) -> bool:
    """Whether the document lists the same claims, in the same order and with the same
    evidence, as the live one: then only the claims' own fields can differ."""
    if current is None or len(current["claims"]) != len(document["claims"]):
        return False
    return all(
        old["id"] == new["id"] and old["evidence"] == new["evidence"]
        for old, new in zip(current["claims"], document["claims"], strict=True)
    )


def _update_claims(
    documents: list[dict[str, Any]], current: dict[str, dict[str, Any] | None]
) -> None:
    """Write in place the claims whose own fields changed (a status note, a statement),
    keeping their rows and evidence links: one ``executemany`` for all of them."""
    rows = [
        (*(new[name] for name in _CLAIM_TEXT), new["id"])
        for d in documents
        for old, new in zip(current[d["key"]]["claims"], d["claims"], strict=True)  # type: ignore[index]
        if any(old[name] != new[name] for name in _CLAIM_TEXT)
    ]
    if not rows:
        return
    quote = connection.ops.quote_name
    assignments = ", ".join(f"{quote(name)} = %s" for name in _CLAIM_TEXT)
    with connection.cursor() as cursor:
        cursor.executemany(
            f"UPDATE {quote(Claim._meta.db_table)} SET {assignments} WHERE claim_id = %s", rows
        )


_CLAIM_COLUMNS = (
    "case",
    "claim_id",
    "position",
    "statement",
    "status",
    "status_note",
    "basis",
    "origin",
)


def _apply_claims(cases: dict[str, int], documents: list[dict[str, Any]]) -> None:
    if not documents:
        return
    rows = [
        (
            cases[d["key"]],
            c["id"],
            index,
            c["statement"],
            c["status"],
            c["status_note"],
            c["basis"],
            c["origin"],
        )
        for d in documents
        for index, c in enumerate(d["claims"])
    ]
    ids = reserve_ids(Claim, len(rows))
    if ids is not None:
        insert_tuples(
            Claim,
            ("id", *_CLAIM_COLUMNS),
            [(pk, *row) for pk, row in zip(ids, rows, strict=True)],
        )
        claim_pks = {row[1]: pk for pk, row in zip(ids, rows, strict=True)}
    else:  # inserted without returning primary keys: read them back
        insert_tuples(Claim, _CLAIM_COLUMNS, rows)
        claim_pks = dict(
            Claim.objects.filter(case_id__in={row[0] for row in rows}).values_list("claim_id", "pk")
        )
    source_pks = dict(
        Source.objects.filter(
            key__in={e["source"] for d in documents for c in d["claims"] for e in c["evidence"]}
        ).values_list("key", "pk")
    )
    insert_tuples(
        EvidenceLink,
        ("claim", "position", "source", "relation", "locator"),
        [
            (claim_pks[c["id"]], index, source_pks[e["source"]], e["relation"], e["locator"])
            for d in documents
            for c in d["claims"]
            for index, e in enumerate(c["evidence"])
        ],
    )
    _reserve_claim_ids([cases[d["key"]] for d in documents])


def _reserve_claim_ids(case_pks: list[int]) -> None:
    """Reserve the IDs of these cases' claims for their case, for good (an ID once used is
    never given to another case): one ``INSERT … SELECT`` from the claims just written,
    IDs already reserved left as they are."""
    quote = connection.ops.quote_name
    reserved, claims, case = (quote(m._meta.db_table) for m in (ClaimIdReservation, Claim, Case))
    among, params = _among("cl.case_id", case_pks)
    now = ClaimIdReservation._meta.get_field("reserved_at").get_db_prep_save(
        timezone.now(), connection
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {reserved} (claim_id, case_key, reserved_at) "
            f"SELECT cl.claim_id, c.key, %s FROM {claims} cl JOIN {case} c ON c.id = cl.case_id "
            f"WHERE {among} ON CONFLICT DO NOTHING",
            [now, *params],
        )


def _among(column: str, ids: list[int]) -> tuple[str, list[Any]]:
    """``column`` among ``ids``: one array parameter on PostgreSQL, a list elsewhere."""
    if connection.vendor == "postgresql":
        return f"{column} = ANY(%s)", [ids]
    return f"{column} IN ({', '.join(['%s'] * len(ids))})", list(ids)


def _apply_assessments(cases: dict[str, int], documents: list[dict[str, Any]]) -> None:
    if not documents:
        return
    methods = dict(
        AssessmentMethod.objects.filter(
            key__in={a["method"] for d in documents for a in d["assessments"]}
        ).values_list("key", "pk")
    )
    insert_tuples(
        Assessment,
        (
            "case",
            "position",
            "method",
            "assessed_on",
            "assessor",
            "values",
            "impact",
            "impact_ungraded_reason",
            "narrative",
            "basis_claims",
            "basis_sources",
        ),
        [
            (
                cases[d["key"]],
                index,
                methods[a["method"]],
                parse_date(a["assessed_on"]),
                a["assessor"],
                a["values"],
                a["impact"],
                a["impact_ungraded_reason"],
                a["narrative"],
                a["evidence_basis"]["claims"],
                a["evidence_basis"]["sources"],
            )
            for d in documents
            for index, a in enumerate(d["assessments"])
        ],
    )


_FIGURE_FIELDS = ("position", "value", "unit", "measure", "scope", "description", "claims")


def _apply_figures(cases: dict[str, int], documents: list[dict[str, Any]], old: list[int]) -> None:
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
            values = (
                index,
                number_literal(f["value"]),
                f["unit"],
                f["measure"],
                f["scope"],
                f["description"],
                f["claims"],
            )
            figure = existing.get(f["id"])
            if figure is None:
                created.append((cases[d["key"]], f["id"], skeleton(f["id"]), *values))
            else:
                for name, value in zip(_FIGURE_FIELDS, values, strict=True):
                    setattr(figure, name, value)
                changed.append(figure)
    if changed:
        Figure.objects.bulk_update(changed, _FIGURE_FIELDS, batch_size=_BULK)
    insert_tuples(Figure, ("case", "figure_id", "id_skeleton", *_FIGURE_FIELDS), created)


def _apply_affected(
    cases: dict[str, int],
    documents: list[dict[str, Any]],
    current: dict[str, dict[str, Any] | None],
) -> None:
    """The cases' affected entries, rewritten where the list differs from the live one."""
    listed = [
        d
        for d in documents
        if (live := current[d["key"]]) is None or live.get("affected", []) != d.get("affected", [])
    ]
    _delete(
        AffectedEntry, "case_id", [cases[d["key"]] for d in listed if current[d["key"]] is not None]
    )
    entries = [
        (d["key"], index, a) for d in listed for index, a in enumerate(d.get("affected", []))
    ]
    if not entries:
        return
    components = dict(
        Component.objects.filter(key__in={a["component"] for _, _, a in entries}).values_list(
            "key", "pk"
        )
    )
    insert_tuples(
        AffectedEntry,
        ("case", "position", "component", "status", "ranges", "versions", "claims", "note"),
        [
            (
                cases[key],
                index,
                components[a["component"]],
                a["status"],
                a["ranges"],
                a["versions"],
                a["claims"],
                a["note"],
            )
            for key, index, a in entries
        ],
    )


def _restore_runs(cases: dict[str, int], documents: list[dict[str, Any]]) -> None:
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
                case_id=cases[key],
                file_sha256=summary.get("sha256", ""),
                summary=summary,
                started_at=summary.get("started_at"),
            )
            for run_id, (key, summary) in runs.items()
            if run_id not in present
        ],
    )


def apply_case_links(
    cases: dict[str, int],
    documents: list[dict[str, Any]],
    *,
    current: dict[str, dict[str, Any] | None],
) -> set[str]:
    """Attributions and relations, written once every case of the change exists
    (``cases``: their primary keys by key).

    Returns the cases whose documents show a symmetric relation that changed."""
    attributing = [
        d
        for d in documents
        if (live := current[d["key"]]) is None or live["attributions"] != d["attributions"]
    ]
    _delete(
        Attribution,
        "case_id",
        [cases[d["key"]] for d in attributing if current[d["key"]] is not None],
    )
    insert_tuples(
        Attribution,
        ("case", "position", "figure", "role", "note"),
        [
            (cases[d["key"]], index, a["figure"], a["role"], a["note"])
            for d in attributing
            for index, a in enumerate(d["attributions"])
        ],
    )
    if all(
        (now := current[d["key"]]) is not None and now["relations"] == d["relations"]
        for d in documents
    ):
        # every document lists the relations its case has: writing them changes nothing
        return set()
    return _apply_relations(cases, documents, [cases[d["key"]] for d in documents])


Triple = tuple[int, int, str]


def _apply_relations(
    cases: dict[str, int], documents: list[dict[str, Any]], ids: list[int]
) -> set[str]:
    """Each document speaks for its relations: symmetric ones either way, directed ones from
    it. Documents are applied one after the other, in memory, as if each replaced its
    relations in turn; then only the rows that differ are deleted and inserted.

    Returns the keys of the cases on either side of a symmetric relation that changed: the
    only cases other than the written ones whose documents this can change.
    """
    before: dict[Triple, tuple[int, str]] = {}
    keys = {pk: key for key, pk in cases.items()}
    for pk, case, other, kind, note, case_key, other_key in Relation.objects.filter(
        Q(case_id__in=ids) | Q(other_id__in=ids)
    ).values_list("pk", "case_id", "other_id", "kind", "note", "case__key", "other__key"):
        before[(case, other, kind)] = (pk, note)
        keys[case], keys[other] = case_key, other_key
    pks = dict(cases)
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
    insert_tuples(
        Relation,
        ("case", "other", "kind", "note"),
        [(case, other, kind, after[(case, other, kind)]) for case, other, kind in fresh],
    )
    return {
        keys[pk]
        for case, other, kind in stale | fresh
        if kind in SYMMETRIC_RELATIONS
        for pk in (case, other)
    }
