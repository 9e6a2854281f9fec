"""Reads used by views, the API and commands, with flat query counts."""

from __future__ import annotations

from typing import Any

from django.db import connections, router
from django.db.models import QuerySet

from claimsdb.models import Case, Revision
from claimsdb.records import record_document


def case_list() -> QuerySet[Case]:
    return Case.objects.order_by("key")


def case_document_or_none(key: str) -> dict[str, Any] | None:
    return record_document("case", key)


def latest_revision_number(record_kind: str, record_key: str) -> int | None:
    return (
        Revision.objects.filter(record_kind=record_kind, record_key=record_key)
        .order_by("-number")
        .values_list("number", flat=True)
        .first()
    )


# How many of a case's newest revisions are read to date its claims' withdrawals.
WITHDRAWAL_LOOKBACK = 25


def claim_withdrawals(
    case_key: str, claim_ids: list[str], *, up_to: int | None = None
) -> dict[str, tuple[Any, bool]]:
    """When each of the (withdrawn) claims was withdrawn: ``{claim id: (time, exact)}``.

    The time is that of the oldest revision in the unbroken run of the case's newest
    revisions (up to revision ``up_to``) in which the claim is withdrawn. One query over at
    most ``WITHDRAWAL_LOOKBACK`` revisions: a withdrawal older than those is given as the
    oldest revision read, with ``exact`` False (withdrawn on or before that time).
    """
    import json

    if not claim_ids:
        return {}
    revisions = Revision.objects.filter(record_kind="case", record_key=case_key)
    if up_to is not None:
        revisions = revisions.filter(number__lte=up_to)
    rows = list(
        revisions.order_by("-number").values_list("created_at", "snapshot")[:WITHDRAWAL_LOOKBACK]
    )
    open_runs: dict[str, Any] = {}  # claim id → time of the oldest revision of its run so far
    found: dict[str, tuple[Any, bool]] = {}
    pending = set(claim_ids)
    for created_at, snapshot in rows:
        withdrawn = {
            claim["id"]
            for claim in json.loads(snapshot).get("claims", [])
            if claim.get("status") == "withdrawn"
        }
        for claim_id in list(pending):
            if claim_id in withdrawn:
                open_runs[claim_id] = created_at
            else:
                pending.discard(claim_id)
                if claim_id in open_runs:
                    found[claim_id] = (open_runs[claim_id], True)
        if not pending:
            break
    # a run reaching the case's first revision began there; one cut off by the bound did not
    complete = len(rows) < WITHDRAWAL_LOOKBACK
    for claim_id in pending:
        if claim_id in open_runs:
            found[claim_id] = (open_runs[claim_id], complete)
    return found


def record_history(record_kind: str, record_key: str) -> QuerySet[Revision]:
    """A record's revisions, newest first, with their authors."""
    return (
        Revision.objects.filter(record_kind=record_kind, record_key=record_key)
        .select_related("author")
        .order_by("-number")
    )


def case_scope(key: str) -> dict[str, Any]:
    """What bounds a case, for the record page's Scope section.

    ``rules``: active non-attribution rules naming this case (with the figure described:
    "the 155 production responses of CP22-002 must not be attributed to this case") and
    rules protecting this case's own figures from other cases; ``relations``: the case's
    relations to other cases as its document lists them, plus directed relations pointing
    at it from elsewhere (``incoming``).
    """
    from claimsdb.models import Figure, Relation, ScopeRule

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

    def describe(rule):
        figure = figures.get(rule.figure)
        return {
            "key": rule.key,
            "figure": rule.figure,
            "figure_value": figure.value if figure else None,
            "figure_unit": figure.unit if figure else "",
            "figure_scope": figure.scope if figure else "",
            "figure_case": figure.case.key if figure else "",
            "case": rule.case,
            "reason": rule.reason,
        }

    document = case_document_or_none(key) or {"relations": []}
    incoming = [
        {"case": r.case.key, "kind": r.kind, "note": r.note}
        for r in Relation.objects.select_related("case")
        .filter(other__key=key)
        .exclude(kind__in=["same_event", "related_distinct"])
        .order_by("case__key", "kind")
    ]
    return {
        "forbidden_here": [describe(r) for r in rules],
        "protecting_own": [describe(r) for r in protecting],
        "relations": document["relations"],
        "incoming": incoming,
    }


# --- Reads for the web pages ----------------------------------------------------------------
# Each runs a fixed number of queries, whatever the size of the case.


def sources_by_key(keys: set[str] | list[str]) -> dict[str, dict[str, Any]]:
    """The live documents of the named sources."""
    from claimsdb.models import Source
    from claimsdb.records import source_document

    return {s.key: source_document(s) for s in Source.objects.filter(key__in=set(keys))}


def sources_as_of(keys: set[str] | list[str], number: int) -> dict[str, dict[str, Any]]:
    """The named sources as they were at revision ``number`` (from their snapshots)."""
    import json

    from django.db.models import Max

    latest = (
        Revision.objects.filter(record_kind="source", record_key__in=set(keys), number__lte=number)
        .values("record_key")
        .annotate(last=Max("number"))
        .values_list("last", flat=True)
    )
    return {
        r.record_key: json.loads(r.snapshot)
        for r in Revision.objects.filter(number__in=list(latest)).only("record_key", "snapshot")
    }


def methods_by_key(keys: set[str] | list[str]) -> dict[str, Any]:
    from claimsdb.models import AssessmentMethod

    return {m.key: m for m in AssessmentMethod.objects.filter(key__in=set(keys))}


def scope_of_document(document: dict[str, Any]) -> dict[str, Any]:
    """``case_scope`` for a case document already in hand (the live one or a snapshot), from
    the working state. Three queries. See ``scope_sections`` for what it holds."""
    from django.db.models import Q

    from claimsdb.models import Relation, ScopeRule

    key = document["key"]
    own = [f["id"] for f in document["figures"]]
    rules = list(
        ScopeRule.objects.filter(status="active")
        .filter(Q(case=key) | Q(figure__in=own))
        .order_by("key")
        .values("key", "figure", "case", "reason")
    )
    wanted = {r["figure"] for r in rules} | {a["figure"] for a in document["attributions"]}
    incoming = [
        {"case": r.case.key, "kind": r.kind, "note": r.note}
        for r in Relation.objects.select_related("case")
        .filter(other__key=key)
        .exclude(kind__in=SYMMETRIC_RELATIONS)
        .order_by("case__key", "kind")
    ]
    return scope_sections(document, rules, figures_by_id(wanted), incoming)


# Relations a case's document lists on both sides; the others are shown on the case they
# point at as "incoming".
SYMMETRIC_RELATIONS = ("same_event", "related_distinct")


def figure_row(figure: dict[str, Any], case_key: str) -> dict[str, Any]:
    """A figure as the pages show it: its document fields and the key of its case."""
    fields = ("id", "value", "unit", "measure", "scope", "description")
    return {**{name: figure[name] for name in fields}, "case": case_key}


def figures_by_id(figure_ids: set[str] | list[str]) -> dict[str, dict[str, Any]]:
    """The named figures of the working state (``figure_row``), by ID. One query."""
    from claimsdb.models import Figure

    return {
        f.figure_id: figure_row(
            {
                "id": f.figure_id,
                "value": f.value,
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
    rules: list[dict[str, Any]],
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

    def describe(rule: dict[str, Any]) -> dict[str, Any]:
        figure = figures.get(rule["figure"])
        return {
            "key": rule["key"],
            "figure": rule["figure"],
            "figure_value": figure["value"] if figure else None,
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


def record_revisions(
    record_kind: str, record_key: str, *, material_only: bool = False
) -> QuerySet[Revision]:
    """A record's revisions, newest first, without their snapshots."""
    revisions = record_history(record_kind, record_key).defer("snapshot")
    return revisions.filter(material=True) if material_only else revisions


def record_revision(record_kind: str, record_key: str, number: int) -> Revision | None:
    """One revision of one record (with its snapshot), or None."""
    return (
        Revision.objects.select_related("author")
        .filter(record_kind=record_kind, record_key=record_key, number=number)
        .first()
    )


def recent_revisions(limit: int = 20) -> QuerySet[Revision]:
    """The latest revisions across the knowledge base, without snapshots."""
    return Revision.objects.select_related("author").defer("snapshot").order_by("-number")[:limit]


def current_assessment_filter(dimension: str, value: str) -> Any:
    """An ``Exists`` matching cases whose current (newest) assessment has ``dimension=value``."""
    from django.db.models import Exists, OuterRef, Subquery

    from claimsdb.models import Assessment

    newest = (
        Assessment.objects.filter(case=OuterRef("case")).order_by("-position").values("position")
    )
    return Exists(
        Assessment.objects.filter(
            case=OuterRef("pk"), position=Subquery(newest[:1]), **{f"values__{dimension}": value}
        )
    )


def case_list_filtered(
    *, status: str = "", tag: str = "", values: dict[str, str] | None = None
) -> QuerySet[Case]:
    """The cases the list page shows, by key: the page is cut on it (``page_keys``) and
    its rows read with ``case_list_rows``.

    ``values`` filters on the current assessment: ``{dimension key: value key}``; the caller
    checks the keys against the methods' vocabularies.
    """
    cases = Case.objects.order_by("key")
    if status:
        cases = cases.filter(status=status)
    if tag:
        cases = cases.filter(tags__name=tag)
    for dimension, value in (values or {}).items():
        cases = cases.filter(current_assessment_filter(dimension, value))
    return cases


def case_list_rows(keys: list[int]) -> list[dict[str, Any]]:
    """One page of the case list (primary keys, in page order) as plain rows: key, title,
    status, summary, claim count, latest revision number, tags (by name) and the current
    assessment (``None``, or its method key, values, impact and date).

    Three queries whatever the page holds, and no model instances: the case columns with
    the correlated count and revision (worked out for the page's rows only), the page's
    tags, and the page's current assessments alone. Each is put together once
    (``batch_values``): the page's keys are their one parameter.
    """
    from claimsdb.models import Assessment, CaseTag
    from claimsdb.records.batched import batch_values

    found = {
        row[0]: dict(zip(CASE_LIST_FIELDS, row, strict=True))
        for row in batch_values("case_list.rows", Case, _case_list_rows, keys)
    }
    for row in found.values():
        row["tags"] = []
        row["assessment"] = None
    ids = list(found)
    for case_id, name in batch_values("case_list.tags", CaseTag, _case_list_tags, ids):
        found[case_id]["tags"].append(name)
    for case_id, method, chosen, impact, assessed_on in batch_values(
        "case_list.assessments", Assessment, _case_list_assessments, ids
    ):
        found[case_id]["assessment"] = {
            "method": method,
            "values": chosen,
            "impact": impact,
            "assessed_on": assessed_on,
        }
    return [found[key] for key in keys if key in found]


CASE_LIST_FIELDS = ("pk", "key", "title", "status", "summary", "claim_count", "latest_revision")


def _case_list_rows(ids: Any) -> QuerySet[Any]:
    from django.db.models import OuterRef, Subquery

    from claimsdb.models import Claim

    latest = Revision.objects.filter(record_kind="case", record_key=OuterRef("key")).order_by(
        "-number"
    )
    return (
        Case.objects.filter(pk__in=ids)
        .annotate(
            # a withdrawn claim stays in its case but no longer counts as one of its claims
            claim_count=count_of(
                Claim.objects.filter(case=OuterRef("pk")).exclude(status="withdrawn"), "case"
            ),
            latest_revision=Subquery(latest.values("number")[:1]),
        )
        .order_by()
        .values_list(*CASE_LIST_FIELDS)
    )


def _case_list_tags(ids: Any) -> QuerySet[Any]:
    from claimsdb.models import CaseTag

    return (
        CaseTag.objects.filter(case_id__in=ids)
        .order_by("case_id", "name")
        .values_list("case_id", "name")
    )


def _case_list_assessments(ids: Any) -> QuerySet[Any]:
    from django.db.models import OuterRef, Subquery

    from claimsdb.models import Assessment

    newest = (
        Assessment.objects.filter(case=OuterRef("case")).order_by("-position").values("position")
    )
    return (
        Assessment.objects.filter(case_id__in=ids, position=Subquery(newest[:1]))
        .order_by()
        .values_list("case_id", "method__key", "values", "impact", "assessed_on")
    )


def case_tags() -> list[str]:
    """Every tag name in use, sorted.

    On PostgreSQL by skipping along the index on names, from one name to the next: as many
    index probes as there are names, where ``DISTINCT`` reads every tag of every case on
    each page of the case list."""
    from claimsdb.models import CaseTag

    connection = connections[router.db_for_read(CaseTag)]  # a replica, where one may serve
    if connection.vendor != "postgresql":
        return list(CaseTag.objects.order_by("name").values_list("name", flat=True).distinct())
    quote = connection.ops.quote_name
    table, name = quote(CaseTag._meta.db_table), quote(CaseTag._meta.get_field("name").column)
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH RECURSIVE names(name) AS ("
            f"(SELECT {name} FROM {table} ORDER BY {name} LIMIT 1) UNION ALL "
            f"SELECT (SELECT {name} FROM {table} WHERE {name} > names.name "
            f"ORDER BY {name} LIMIT 1) FROM names WHERE names.name IS NOT NULL) "
            f"SELECT name FROM names WHERE name IS NOT NULL"
        )
        return [found for (found,) in cursor.fetchall()]


def source_list() -> QuerySet[Any]:
    """Sources by key, each with how many evidence links of claims not withdrawn cite it
    (``link_count``)."""
    from django.db.models import OuterRef

    from claimsdb.models import EvidenceLink, Source

    links = EvidenceLink.objects.filter(source=OuterRef("pk")).exclude(claim__status="withdrawn")
    return Source.objects.annotate(link_count=count_of(links, "source")).order_by("key")


def count_of(related: QuerySet[Any], group: str) -> Any:
    """The number of rows of ``related`` (filtered on an ``OuterRef``), as a correlated
    subquery: computed for the rows a page shows, and left out of the page's count query."""
    from django.db.models import Count, IntegerField, Subquery, Value
    from django.db.models.functions import Coalesce

    counted = related.order_by().values(group).annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


def claims_citing_source(key: str) -> QuerySet[Any]:
    """The claims with an evidence link to a source, with their cases and the links."""
    from claimsdb.models import EvidenceLink

    return (
        EvidenceLink.objects.filter(source__key=key)
        .select_related("claim__case")
        .order_by("claim__case__key", "claim__position", "position")
    )


def rule_list() -> QuerySet[Any]:
    from claimsdb.models import ScopeRule

    return ScopeRule.objects.order_by("key")


def method_list() -> QuerySet[Any]:
    from claimsdb.models import AssessmentMethod

    return AssessmentMethod.objects.order_by("key")


def figures_of_other_cases(case_key: str) -> QuerySet[Any]:
    """Figures an attribution could name: those of every other case."""
    from claimsdb.models import Figure

    return (
        Figure.objects.select_related("case")
        .exclude(case__key=case_key)
        .order_by("case__key", "position")
    )


def forbidding_rules(case_key: str) -> dict[str, str]:
    """Figures the active non-attribution rules keep from a case: figure ID → rule key."""
    from claimsdb.models import ScopeRule

    rules = ScopeRule.objects.filter(
        case=case_key, kind="non_attribution", status="active"
    ).values_list("figure", "key")
    forbidden: dict[str, str] = {}
    for figure_id, key in rules.order_by("key"):
        forbidden.setdefault(figure_id, key)
    return forbidden


def all_figures() -> QuerySet[Any]:
    from claimsdb.models import Figure

    return Figure.objects.select_related("case").order_by("case__key", "position")


def case_keys_and_titles() -> list[tuple[str, str]]:
    return list(Case.objects.order_by("key").values_list("key", "title"))


def suggested_claim_id(case_key: str) -> str:
    """The next free ``CLM-<case>-<letter>`` ID (never one used before, even if withdrawn)."""
    from claimsdb.models import Claim, ClaimIdReservation

    prefix = f"CLM-{case_key}-"
    used = set(
        ClaimIdReservation.objects.filter(claim_id__startswith=prefix).values_list(
            "claim_id", flat=True
        )
    ) | set(Claim.objects.filter(claim_id__startswith=prefix).values_list("claim_id", flat=True))
    number = 0
    while True:
        number += 1
        suffix, n = "", number
        while n:
            n, rest = divmod(n - 1, 26)
            suffix = chr(ord("A") + rest) + suffix
        if prefix + suffix not in used:
            return prefix + suffix


# --- Pages of a release's entries (docs/pagination.md) ----------------------------------------


def release_entry_list(release: Any, *, changed: bool | None = None) -> QuerySet[Any]:
    """A release's entries in the order of its unique index (record kind, then key), each
    with its revision's number and no snapshot: the web and API pages of a release slice
    it. ``changed``: only the new, updated and withdrawn entries (True) or only the
    unchanged ones (False)."""
    from claimsdb.models import ReleaseChange, ReleaseEntry

    entries = (
        ReleaseEntry.objects.filter(release=release)
        .select_related("revision")
        .defer("revision__snapshot")
        .order_by("record_kind", "record_key")
    )
    if changed is True:
        entries = entries.exclude(change=ReleaseChange.UNCHANGED)
    elif changed is False:
        entries = entries.filter(change=ReleaseChange.UNCHANGED)
    return entries


def with_previous_revisions(release: Any, entries: list[Any]) -> list[Any]:
    """Set ``previous_revision`` on a page of ``release_entry_list``: the revision number the
    release before published for the same record (None if it had none). One query."""
    from claimsdb.models import ReleaseEntry

    previous = {
        (kind, key): number
        for kind, key, number in ReleaseEntry.objects.filter(
            release__number=release.number - 1,
            record_key__in={entry.record_key for entry in entries},
        ).values_list("record_kind", "record_key", "revision__number")
    }
    for entry in entries:
        entry.previous_revision = previous.get((entry.record_kind, entry.record_key))
    return entries


def page_keys(queryset: QuerySet[Any]) -> QuerySet[Any]:
    """The primary keys of ``queryset``, in its order, to cut a page on.

    A page of rows with costly columns (correlated counts, the latest revision) is cut on
    their keys first: PostgreSQL works out the selected columns of every row an OFFSET
    skips, so the costly columns are read for the page's rows only (``rows_in_order``)."""
    return queryset.prefetch_related(None).values_list("pk", flat=True)


def rows_in_order(queryset: QuerySet[Any], keys: list[Any]) -> list[Any]:
    """The rows of ``queryset`` with these primary keys, in the order of ``keys``."""
    rows = {row.pk: row for row in queryset.filter(pk__in=list(keys))}
    return [rows[key] for key in keys if key in rows]
