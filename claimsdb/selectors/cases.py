"""Reads of cases: one case's document, the case list's filters and its rows, the tags in
use, and the next free claim ID."""

from __future__ import annotations

import re
from collections.abc import Collection
from datetime import date
from typing import Any

from django.db import connections, router
from django.db.models import Exists, F, JSONField, OuterRef, QuerySet, Subquery
from django.db.models.functions import JSONObject

from claimsdb.models import (
    AffectedEntry,
    Assessment,
    Case,
    CaseTag,
    Claim,
    ClaimIdReservation,
    Figure,
    Revision,
)
from claimsdb.records import record_document
from claimsdb.records.batched import RawRows, batch_values

from .pages import count_of


def case_document_or_none(key: str) -> dict[str, Any] | None:
    return record_document("case", key)


def case_keys_and_titles() -> list[tuple[str, str]]:
    return list(Case.objects.order_by("key").values_list("key", "title"))


def current_assessment_filter(dimension: str, value: str) -> Exists:
    """An ``Exists`` matching cases whose current (newest) assessment has ``dimension=value``."""
    newest = (
        Assessment.objects.filter(case=OuterRef("case")).order_by("-position").values("position")
    )
    return Exists(
        Assessment.objects.filter(
            case=OuterRef("pk"), position=Subquery(newest[:1]), **{f"values__{dimension}": value}
        )
    )


def case_list_filtered(
    *,
    status: str = "",
    tag: str = "",
    values: dict[str, str] | None = None,
    cases: QuerySet[Case] | None = None,
    component: str = "",
    affected_status: str = "",
) -> QuerySet[Case]:
    """The cases the list page shows, by key: the page is cut on it (``pages.page_keys``)
    and its rows read with ``case_list_rows``.

    ``values`` filters on the current assessment: ``{dimension key: value key}``; the caller
    checks the keys against the methods' vocabularies. ``cases``: the rows to filter (all
    cases; the list as CSV passes them with their latest revision, ``visible_records``).
    """
    cases = (Case.objects.all() if cases is None else cases).order_by("key")
    if status:
        cases = cases.filter(status=status)
    if tag:
        cases = cases.filter(tags__name=tag)
    for dimension, value in (values or {}).items():
        cases = cases.filter(current_assessment_filter(dimension, value))
    if component or affected_status:
        # one entry holding both: along the entries' (component, status, case) index
        entries = AffectedEntry.objects.filter(case=OuterRef("pk"))
        if component:
            entries = entries.filter(component__key=component)
        if affected_status:
            entries = entries.filter(status=affected_status)
        cases = cases.filter(Exists(entries))
    return cases


def case_list_rows(keys: list[int]) -> list[dict[str, Any]]:
    """One page of the case list (primary keys, in page order) as plain rows: key, title,
    status, summary, claim count, latest revision number, tags (by name) and the current
    assessment (``None``, or its method key, values, impact and date).

    No model instances, and a fixed number of queries whatever the page holds, each put
    together once (``batch_values``) with the page's keys as its one parameter: on
    PostgreSQL one query, the case columns with the correlated count, revision, tags (an
    array) and current assessment (a JSON object) worked out for the page's rows only;
    elsewhere three (the case columns, the page's tags, its current assessments).
    """
    if _postgresql(Case):
        return _case_list_rows_in_one(keys)
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


def _postgresql(model: type) -> bool:
    return connections[router.db_for_read(model)].vendor == "postgresql"


def _case_list_rows_in_one(keys: list[int]) -> list[dict[str, Any]]:
    found = {}
    for row in batch_values("case_list.rows_in_one", Case, _case_list_rows_with_more, keys):
        fields = dict(zip(CASE_LIST_FIELDS, row, strict=False))
        tags, assessment = row[len(CASE_LIST_FIELDS) :]
        fields["tags"] = list(tags or [])
        if assessment is not None:
            # a date in JSON is its ISO text
            assessment["assessed_on"] = date.fromisoformat(assessment["assessed_on"])
        fields["assessment"] = assessment
        found[fields["pk"]] = fields
    return [found[key] for key in keys if key in found]


def _case_list_rows_with_more(ids: Any) -> QuerySet[Any]:
    """``_case_list_rows`` with the case's tags, sorted, and its current assessment (the
    newest, by position) as one JSON object: PostgreSQL's own arrays and JSON."""
    from django.contrib.postgres.expressions import ArraySubquery

    newest = (
        Assessment.objects.filter(case=OuterRef("pk"))
        .order_by("-position")
        .values(
            current=JSONObject(
                method=F("method__key"),
                values=F("values"),
                impact=F("impact"),
                assessed_on=F("assessed_on"),
            )
        )
    )
    return (
        _case_list_rows(ids)
        .annotate(
            tag_names=ArraySubquery(
                CaseTag.objects.filter(case=OuterRef("pk")).order_by("name").values("name")
            ),
            current_assessment=Subquery(newest[:1], output_field=JSONField()),
        )
        .values_list(*CASE_LIST_FIELDS, "tag_names", "current_assessment")
    )


def _case_list_rows(ids: Any) -> QuerySet[Any]:
    latest = Revision.objects.filter(record_kind="case", record_key=OuterRef("key")).order_by(
        "-number"
    )
    return (
        Case.objects.filter(pk__among=ids)
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
    return (
        CaseTag.objects.filter(case_id__among=ids)
        .order_by("case_id", "name")
        .values_list("case_id", "name")
    )


def _case_list_assessments(ids: Any) -> QuerySet[Any]:
    newest = (
        Assessment.objects.filter(case=OuterRef("case")).order_by("-position").values("position")
    )
    return (
        Assessment.objects.filter(case_id__among=ids, position=Subquery(newest[:1]))
        .order_by()
        .values_list("case_id", "method__key", "values", "impact", "assessed_on")
    )


def case_tags() -> list[str]:
    """Every tag name in use, sorted.

    On PostgreSQL by skipping along the index on names, from one name to the next: as many
    index probes as there are names, where ``DISTINCT`` reads every tag of every case on
    each page of the case list."""
    query = case_tags_query()
    if not isinstance(query, RawRows):
        return [name for (name,) in query]
    connection = connections[query.alias]
    with connection.cursor() as cursor:
        cursor.execute(query.sql, query.params)
        return [found for (found,) in cursor.fetchall()]


def case_tags_query() -> RawRows | QuerySet[Any]:
    """``case_tags``' query, to send with others (``records.batched.fetch_together``): its
    rows hold one name each."""
    alias = router.db_for_read(CaseTag)  # a replica, where one may serve
    connection = connections[alias]
    if connection.vendor != "postgresql":
        return CaseTag.objects.order_by("name").values_list("name").distinct()
    quote = connection.ops.quote_name
    table, name = quote(CaseTag._meta.db_table), quote(CaseTag._meta.get_field("name").column)
    return RawRows(
        alias,
        f"WITH RECURSIVE names(name) AS ("
        f"(SELECT {name} FROM {table} ORDER BY {name} LIMIT 1) UNION ALL "
        f"SELECT (SELECT {name} FROM {table} WHERE {name} > names.name "
        f"ORDER BY {name} LIMIT 1) FROM names WHERE names.name IS NOT NULL) "
        f"SELECT name FROM names WHERE name IS NOT NULL",
        (),
    )


def tags_in_use(names: Collection[str]) -> set[str]:
    """Which of ``names`` some case has. One index probe per name: the tags of every case
    that has one of them (a third of the knowledge base for a common tag) are not read."""
    if not names:
        return set()
    connection = connections[router.db_for_read(CaseTag)]
    if connection.vendor != "postgresql":
        return set(CaseTag.objects.filter(name__in=names).order_by().values_list("name", flat=True))
    quote = connection.ops.quote_name
    table, name = quote(CaseTag._meta.db_table), quote(CaseTag._meta.get_field("name").column)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT wanted.name FROM unnest(%s::text[]) AS wanted(name) "
            f"WHERE EXISTS (SELECT 1 FROM {table} WHERE {name} = wanted.name)",
            [sorted(names)],
        )
        return {found for (found,) in cursor.fetchall()}


def suggested_claim_id(case_key: str) -> str:
    """The next free ``CLM-<case>-<letter>`` ID (never one used before, even if withdrawn)."""
    return suggested_claim_ids(case_key, 1)[0]


def suggested_claim_ids(case_key: str, count: int) -> list[str]:
    """The next ``count`` free ``CLM-<case>-<letter>`` IDs, in order (two queries)."""
    prefix = f"CLM-{case_key}-"
    used = set(
        ClaimIdReservation.objects.filter(claim_id__startswith=prefix).values_list(
            "claim_id", flat=True
        )
    ) | set(Claim.objects.filter(claim_id__startswith=prefix).values_list("claim_id", flat=True))
    return _next_lettered(prefix, used, count)


def suggested_figure_id(case_key: str, taken: Collection[str] = ()) -> str:
    """The next free ``FIG-<case>-<letter>`` ID (figure IDs are unique across the knowledge
    base; ``taken`` adds IDs in the form not yet saved). One query."""
    prefix = f"FIG-{case_key}-"
    used = set(
        Figure.objects.filter(figure_id__startswith=prefix).values_list("figure_id", flat=True)
    )
    return _next_lettered(prefix, used | set(taken), 1)[0]


# the keys a new case is suggested after: a prefix, digits, a hyphen and a number (CP22-003)
_NUMBERED_KEY = re.compile(r"^([A-Z]+[0-9]*-)([0-9]+)$")
SUGGESTION_LOOKBACK = 50


def suggested_case_key() -> str:
    """The key after the greatest numbered case key (``CP22-003`` → ``CP22-004``, its
    zero padding kept), free; empty when there is none to follow. Two queries at most."""
    keys = list(
        Case.objects.filter(key__regex=r"^[A-Z]+[0-9]*-[0-9]+$")
        .order_by("-key")
        .values_list("key", flat=True)[:SUGGESTION_LOOKBACK]
    )
    numbered = [m for m in map(_NUMBERED_KEY.match, keys) if m]
    if not numbered:
        return ""
    prefix = max(numbered, key=lambda m: m.group(0)).group(1)
    same = [m for m in numbered if m.group(1) == prefix]
    width = len(same[0].group(2))
    taken = {m.group(0) for m in same}
    number = max(int(m.group(2)) for m in same) + 1
    while f"{prefix}{number:0{width}d}" in taken:  # pragma: no cover - max + 1 is free
        number += 1
    return f"{prefix}{number:0{width}d}"


def _next_lettered(prefix: str, used: set[str], count: int) -> list[str]:
    """The first ``count`` IDs ``prefix`` + A, B, … Z, AA, … not in ``used``."""
    found: list[str] = []
    number = 0
    while len(found) < count:
        number += 1
        suffix, n = "", number
        while n:
            n, rest = divmod(n - 1, 26)
            suffix = chr(ord("A") + rest) + suffix
        if prefix + suffix not in used:
            found.append(prefix + suffix)
    return found
