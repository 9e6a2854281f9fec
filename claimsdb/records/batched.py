"""Case documents, built from plain rows: the one builder of a case's document.

A case's document gathers rows of eleven tables (claims and their evidence links,
assessments, figures, relations…). They are read with one ``values_list`` query per table
for a whole batch of cases, ordered as the models order them, with no model instance per
row: one case (a record page, the write path), a page of cases (the API's lists) and an
export's batches are all built by ``case_documents``, in the same queries. (Reading cases
through the ORM's prefetches instead spends most of its time building querysets and model
instances, several times slower over a whole knowledge base.)
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from django.core.exceptions import EmptyResultSet
from django.db import connections, router
from django.db.models import Field, ForeignObject, Lookup, Model, QuerySet
from django.db.models.lookups import In
from django.db.models.query import FlatValuesListIterable, ModelIterable, ValuesListIterable

from claimsdb.choices import SYMMETRIC_RELATIONS
from claimsdb.models import (
    AffectedEntry,
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


def _positioned(model: type[Model], *fields: str) -> tuple[type[Model], Callable[[Any], QuerySet]]:
    """A batch query of a table of rows listed in order within their case: ``fields`` of
    the batch's rows, by case and position."""
    return (
        model,
        lambda ids: (
            model._default_manager.filter(case_id__among=ids)
            .order_by("case_id", "position")
            .values_list("case_id", *fields)
        ),
    )


# The queries of a batch's documents: for each, its model and the rows of the batch
# (``ids``: the case ids, compared with ``__among``), the case (or claim)
# id first, ordered as the models order them.
RELATION_FIELDS = ("pk", "case_id", "other_id", "case__key", "other__key", "kind", "note")
BATCH_QUERIES: dict[str, tuple[type[Model], Callable[[Any], QuerySet]]] = {
    "tags": (CaseTag, lambda ids: CaseTag.objects.filter(case_id__among=ids).values_list(
        "case_id", "name"
    )),
    "claims": _positioned(
        Claim, "id", "claim_id", "statement", "status", "status_note", "basis", "origin"
    ),
    "evidence": (EvidenceLink, lambda ids: EvidenceLink.objects.filter(claim__case_id__among=ids)
        .order_by("claim_id", "position")
        .values_list("claim_id", "source__key", "relation", "locator")),
    "assessments": _positioned(
        Assessment, "method__key", "assessed_on", "assessor", "values", "impact",
        "impact_ungraded_reason", "narrative", "basis_claims", "basis_sources",
    ),
    "controls": _positioned(Control, "kind", "text"),
    "unknowns": _positioned(Unknown, "kind", "text"),
    "figures": _positioned(
        Figure, "figure_id", "value", "unit", "measure", "scope", "description", "claims"
    ),
    "attributions": _positioned(Attribution, "figure_id", "role", "note"),
    "relations": (Relation, lambda ids: Relation.objects.filter(case_id__among=ids)
        .order_by()
        .values_list(*RELATION_FIELDS)
        .union(
            Relation.objects.filter(other_id__among=ids, kind__in=SYMMETRIC_RELATIONS)
            .order_by()
            .values_list(*RELATION_FIELDS)
        )),
    "affected": _positioned(
        AffectedEntry, "component__key", "status", "ranges", "versions", "claims", "note"
    ),
    "runs": (ReproductionRun, lambda ids: ReproductionRun.objects.filter(case_id__among=ids)
        .values_list("case_id", "summary")),
}  # fmt: skip


def case_documents(cases: Sequence[Case]) -> list[dict[str, Any]]:
    """The documents of ``cases`` (rows with at least ``CASE_FIELDS``), in their order:
    eleven queries, whatever the cases hold."""
    batch_ids = [case.pk for case in cases]
    fetched = _all_values(list(BATCH_QUERIES), batch_ids)

    def rows(name: str) -> dict[int, list[tuple]]:
        """Rows of one query for the batch, grouped by their case (the first field)."""
        grouped: dict[int, list[tuple]] = defaultdict(list)
        for row in fetched[name]:
            grouped[row[0]].append(row[1:])
        return grouped

    tags = rows("tags")
    claims = rows("claims")
    evidence = rows("evidence")
    assessments = rows("assessments")
    controls = rows("controls")
    unknowns = rows("unknowns")
    figures = rows("figures")
    attributions = rows("attributions")
    batch = set(batch_ids)
    relations_out: dict[int, list[tuple]] = defaultdict(list)
    relations_in: dict[int, list[tuple]] = defaultdict(list)
    for _, case_id, other_id, case_key, other_key, kind, note in fetched["relations"]:
        if case_id in batch:
            relations_out[case_id].append((other_key, kind, note))
        if other_id in batch and kind in SYMMETRIC_RELATIONS:
            relations_in[other_id].append((case_key, kind, note))
    runs = rows("runs")
    affected = rows("affected")

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
        if affected[case.pk]:  # present only when the case names a component (schema.CASE)
            documents[-1]["affected"] = [
                {
                    "component": component,
                    "status": status,
                    "ranges": ranges,
                    "versions": versions,
                    "claims": entry_claims,
                    "note": note,
                }
                for component, status, ranges, versions, entry_claims, note in affected[case.pk]
            ]
    return documents


# Per thread (a compiled query holds its thread's connection): (query name, database
# alias) -> the compiler, its SQL and parameters, and where the batch's ids go in them.
_compiled = threading.local()


def _values(name: str, ids: list[int]) -> Iterable[tuple]:
    """The rows of ``BATCH_QUERIES[name]`` for the cases ``ids`` (``batch_values``)."""
    model, build = BATCH_QUERIES[name]
    return batch_values(name, model, build, ids)


def batch_values(
    name: str, model: type, build: Callable[[Any], QuerySet], ids: list[int]
) -> Iterable[tuple]:
    """The rows of ``build(ids)``, a ``values_list`` query of ``model`` that compares
    primary keys with ``ids`` (``__among``), named ``name`` (unique).

    On PostgreSQL the query is put together and compiled once (per thread and database),
    then run again with each batch's ids in its one array parameter: reading one case
    spends more in the ORM putting its eleven queries together than in running them. The
    query still goes through the connection's cursor (counted, logged, wrapped), and its
    rows through the compiler's converters (JSON, dates, decimals), as the query set's own
    would."""
    alias = router.db_for_read(model)
    connection = connections[alias]
    if connection.vendor != "postgresql" or not ids:
        return build(ids).using(alias)
    compiler, sql, params = _prepared(name, alias, build, ids)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return _converted(compiler, cursor.fetchall())


def _prepared(
    name: str, alias: str, build: Callable[[Any], QuerySet], ids: list[int]
) -> tuple[Any, str, list[Any]]:
    """The compiler of ``batch_values``' query, its SQL and its parameters for ``ids``."""
    cache = _compiled.__dict__.setdefault("queries", {})
    entry = cache.get((name, alias))
    if entry is None:
        marker = Marker(f"{MARK}ids{MARK}")  # stands for the batch's ids while compiling
        compiler = build(marker).query.get_compiler(alias)
        sql, params = compiler.as_sql()
        at = [index for index, param in enumerate(params) if param is marker]
        if not at:  # pragma: no cover - every batch query compares the case ids
            raise AssertionError(f"batch query {name} does not take the ids")
        entry = cache[(name, alias)] = (compiler, sql, tuple(params), at)
    compiler, sql, params, at = entry
    params = list(params)
    for index in at:
        params[index] = ids
    return compiler, sql, params


def _converted(compiler: Any, found: list[tuple]) -> Iterable[tuple]:
    if compiler.has_extra_select:
        found = [row[: compiler.col_count] for row in found]
    return compiler.results_iter(results=[found], tuple_expected=True)


def _all_values(names: list[str], ids: list[int]) -> dict[str, list[tuple]]:
    """The rows of several ``BATCH_QUERIES`` for the cases ``ids``, by name.

    On PostgreSQL the queries are sent together in one pipeline (psycopg's pipeline mode):
    the database runs them one after the other as before, in the same transaction, but
    the process waits for their results once rather than once per query (a case document
    is ten queries, which the write path reads twice). Each still goes through the
    connection's cursor (counted, logged, wrapped)."""
    aliases = {router.db_for_read(BATCH_QUERIES[name][0]) for name in names}
    connection = connections[next(iter(aliases))] if len(aliases) == 1 else None
    if connection is None or connection.vendor != "postgresql" or not ids:
        return {name: list(_values(name, ids)) for name in names}
    alias = connection.alias
    prepared = {name: _prepared(name, alias, BATCH_QUERIES[name][1], ids) for name in names}
    connection.ensure_connection()
    cursors = {}
    try:
        with connection.connection.pipeline():
            for name, (_, sql, params) in prepared.items():
                cursors[name] = connection.cursor()
                cursors[name].execute(sql, params)
            fetched = {name: cursor.fetchall() for name, cursor in cursors.items()}
    finally:
        for cursor in cursors.values():
            cursor.close()
    return {name: list(_converted(prepared[name][0], fetched[name])) for name in names}


class RawRows(NamedTuple):
    """A query of ``fetch_together`` written in SQL: its rows as tuples."""

    alias: str
    sql: str
    params: Sequence[Any]


def fetch_together(querysets: Mapping[str, Together]) -> dict[str, list[Any]]:
    """The results of several independent querysets, by name, as ``list(queryset)`` gives
    them (``values_list`` tuples or flat values, or model instances of a plain query), of
    queries written in SQL (``RawRows``: tuples) and of queries put together once
    (``compiled_query``: tuples, through the compiler's converters).

    On PostgreSQL they are sent together in one pipeline, as ``_all_values`` sends a case
    document's queries: the process waits for the database once, not once per query. The
    querysets must not depend on one another's results (each is put together first)."""
    aliases = {alias_of(query) for query in querysets.values()}
    connection = connections[next(iter(aliases))] if len(aliases) == 1 else None
    if connection is None or connection.vendor != "postgresql" or len(querysets) < 2:
        return {name: _listed(connections[alias_of(q)], q) for name, q in querysets.items()}
    compiled: dict[str, tuple[Any, Any, str, Sequence[Any]]] = {}
    for name, queryset in querysets.items():
        if isinstance(queryset, RawRows):
            compiled[name] = (queryset, None, queryset.sql, queryset.params)
            continue
        if isinstance(queryset, CompiledQuery):
            compiled[name] = (queryset, queryset.compiler, queryset.sql, queryset.params)
            continue
        compiler = queryset.query.get_compiler(connection.alias)
        try:
            sql, params = compiler.as_sql()
        except EmptyResultSet:
            sql = ""  # an ``__in`` an empty list: no row, no query (as the ORM does)
            params = ()
        compiled[name] = (queryset, compiler, sql, params)
    connection.ensure_connection()
    cursors = {}
    try:
        with connection.connection.pipeline():
            for name, (_, _, sql, params) in compiled.items():
                if sql:
                    cursors[name] = connection.cursor()
                    cursors[name].execute(sql, params)
            fetched = {name: cursor.fetchall() for name, cursor in cursors.items()}
    finally:
        for cursor in cursors.values():
            cursor.close()
    return {
        name: _as_listed(queryset, compiler, fetched.get(name, []))
        for name, (queryset, compiler, _, _) in compiled.items()
    }


def alias_of(query: Together) -> str:
    return query.db if isinstance(query, QuerySet) else query.alias


def _listed(connection: Any, query: Together) -> list[Any]:
    if isinstance(query, QuerySet):
        return list(query)
    if not query.sql:  # a compiled query that can match nothing
        return []
    with connection.cursor() as cursor:
        cursor.execute(query.sql, query.params)
        found = cursor.fetchall()
    if isinstance(query, CompiledQuery):
        return list(query.rows(found))
    return [tuple(row) for row in found]


def _as_listed(queryset: Together, compiler: Any, found: list[tuple]) -> list[Any]:
    if isinstance(queryset, RawRows):
        return [tuple(row) for row in found]
    if isinstance(queryset, CompiledQuery):
        return list(queryset.rows(found))
    rows = list(_converted(compiler, found))
    iterable = queryset._iterable_class
    if iterable is FlatValuesListIterable:
        return [row[0] for row in rows]
    if iterable is ValuesListIterable:
        return rows
    if iterable is ModelIterable and not queryset.query.select_related:
        if queryset.query.annotation_select or queryset.query.extra_select:
            raise ValueError("fetch_together: a model query with annotations")
        return model_instances(compiler, queryset.db, rows)
    raise ValueError(f"fetch_together: {iterable.__name__} is not supported")


def model_instances(compiler: Any, alias: str, rows: Iterable[Sequence[Any]]) -> list[Any]:
    """The model instances of a plain model query's converted rows, as the query set would
    make them: the model's columns, then each annotation set on the instance."""
    select_fields = compiler.klass_info["select_fields"]
    start, end = select_fields[0], select_fields[-1] + 1
    names = [column.target.attname for column, _, _ in compiler.select[start:end]]
    model = compiler.klass_info["model"]
    instances = []
    for row in rows:
        instance = model.from_db(alias, names, row[start:end])
        for name, at in compiler.annotation_col_map.items():
            setattr(instance, name, row[at])
        instances.append(instance)
    return instances


MARK = "\ufdd0"  # a noncharacter, to tell a marker and its copies from other text


class Marker(str):
    """Stands for a parameter of a query put together once (``compiled_rows``): a string,
    so that fields and expressions take it as they would the text it stands for, and found
    again among the compiled parameters by identity."""

    __slots__ = ()


class CompiledQuery(NamedTuple):
    """A query put together by ``compiled_query``: where it runs, its compiler (for the
    rows' converters), its SQL and parameters, and the names of its columns."""

    alias: str
    compiler: Any
    sql: str
    params: list[Any]
    names: list[str]

    def rows(self, found: list[tuple]) -> Iterable[tuple]:
        """The rows the database gave for it, through the compiler's converters."""
        return _converted(self.compiler, found) if found else []


# What ``fetch_together`` runs: querysets, queries written in SQL, queries put together once.
Together = QuerySet | RawRows | CompiledQuery


def compiled_query(
    name: str,
    model: type,
    build: Callable[..., QuerySet],
    params: dict[str, Any],
    suffix: str = "",
    suffix_params: Sequence[Any] = (),
) -> CompiledQuery:
    """``build(**markers)``, a ``values`` or ``values_list`` query of ``model``, with
    ``params`` in the markers' places, ``suffix`` (e.g. ``LIMIT %s OFFSET %s``, which the
    ORM would write into the SQL as numbers) and its parameters appended. ``name`` is
    unique to the query's shape: whatever ``build`` does with the markers must not depend
    on their values.

    As ``batch_values``: on PostgreSQL the query is put together and compiled once per
    thread and database (a search's two queries took longer to put together than to run);
    elsewhere every time, with the values themselves."""
    alias = router.db_for_read(model)
    connection = connections[alias]
    if connection.vendor != "postgresql":
        queryset = build(**params).using(alias)
        compiler = queryset.query.get_compiler(alias)
        try:
            sql, compiled = compiler.as_sql()
        except EmptyResultSet:  # ``__in`` an empty list: no row, no query (as the ORM does)
            sql, compiled = "", ()
        positions: dict[str, list[int]] = {}
    else:
        cache = _compiled.__dict__.setdefault("queries", {})
        entry = cache.get((name, alias))
        if entry is None:
            markers = {key: Marker(f"{MARK}{key}{MARK}") for key in params}
            compiler = build(**markers).query.get_compiler(alias)
            sql, compiled = compiler.as_sql()
            positions = {
                key: [i for i, param in enumerate(compiled) if param is marker]
                for key, marker in markers.items()
            }
            copied = MARK in sql or any(
                isinstance(param, str) and MARK in param and not isinstance(param, Marker)
                for param in compiled
            )
            if copied:  # pragma: no cover - a value worked into the SQL would be kept
                raise AssertionError(f"query {name} does not keep its parameters apart")
            entry = cache[(name, alias)] = (compiler, sql, tuple(compiled), positions)
        compiler, sql, compiled, positions = entry
    values = list(compiled)
    for key, at in positions.items():
        for index in at:
            values[index] = params[key]
    query = compiler.query
    names = [*query.extra_select, *query.values_select, *query.annotation_select]
    if not sql:
        return CompiledQuery(alias, compiler, "", [], names)
    return CompiledQuery(alias, compiler, sql + suffix, [*values, *suffix_params], names)


def compiled_rows(
    name: str,
    model: type,
    build: Callable[..., QuerySet],
    params: dict[str, Any],
    suffix: str = "",
    suffix_params: Sequence[Any] = (),
) -> tuple[list[str], Iterable[tuple]]:
    """The column names and rows of ``compiled_query``'s query."""
    (names, rows) = run_together(
        {"": compiled_query(name, model, build, params, suffix, suffix_params)}
    )[""]
    return names, rows


def run_together(queries: Mapping[str, CompiledQuery]) -> dict[str, tuple[list[str], list]]:
    """The column names and rows of each of ``compiled_query``'s queries, sent together
    (``fetch_together``)."""
    found = fetch_together({n: RawRows(q.alias, q.sql, q.params) for n, q in queries.items()})
    return {n: (q.names, list(q.rows(found[n]))) for n, q in queries.items()}


class Among(Lookup):
    """``field__among=values``: on PostgreSQL ``field = ANY(%s::type[])``, the values one
    array parameter, so that a query is the same text whatever their number (a query with
    hundreds of placeholders costs more to put together than to run, and a query put
    together once, ``compiled_query``, takes its ``Marker`` here); elsewhere
    ``field IN (…)``, as ``__in`` writes it.

    ``= ANY`` rather than ``IN (SELECT unnest(…))``: the subquery is a semi-join for the
    planner, and planning a case document's eleven reads that way took PostgreSQL longer
    than running them (bench/README.md)."""

    lookup_name = "among"
    prepare_rhs = False

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, Any]:
        if connection.vendor != "postgresql":
            return In(self.lhs, list(self.rhs)).as_sql(compiler, connection)
        lhs, lhs_params = self.process_lhs(compiler, connection)
        array = f"{self.lhs.output_field.db_type(connection)}[]"
        return f"{lhs} = ANY(%s::{array})", [*lhs_params, self.rhs]


# every field, foreign keys too (whose lookups are their own, not those of every field)
Field.register_lookup(Among)
ForeignObject.register_lookup(Among)


def compiled_among(
    name: str, model: type, build: Callable[[Any], QuerySet], keys: Iterable[str]
) -> CompiledQuery:
    """``build(keys)``, a ``values_list`` query of ``model`` that compares text keys with
    ``keys`` (``__among``), put together once per thread and database under
    ``name`` (``compiled_query``), to run with others (``fetch_together``). No keys: no
    query at all, as the ORM sends none for ``…__in`` an empty list."""
    keys = sorted(keys)
    if not keys:
        return CompiledQuery(router.db_for_read(model), None, "", [], [])
    return compiled_query(name, model, lambda keys: build(keys), {"keys": keys})


def _chain(*groups: Iterable[tuple]) -> Iterable[tuple]:
    for group in groups:
        yield from group
