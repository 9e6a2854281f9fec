"""Keeping the search index current (docs/search.md).

Working entries are replaced in the transaction of the write that changes a case or a
source (``index_cases``, ``index_sources``, called by ``services.apply``), so a search right
after a write finds what it wrote. Released entries are replaced when a release publishes a
changed revision (``index_release_entries``, called by ``release_publish`` for the entries
it records). Each call runs a fixed number of queries, whatever the size of the knowledge
base; the entries it writes are those of the records it is given.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from django.db import connection

from claimsdb.models import Case, Claim, ReleaseChange, ReleaseEntry, Revision, SearchEntry, Source
from claimsdb.models import SearchKind as Kind
from claimsdb.models import SearchScope as Scope
from claimsdb.models.search import MORE_SEPARATOR

WITHDRAWN = "withdrawn"
_BATCH = 1000
_CHUNK = 500  # records per IN (...) list, well under every database's parameter limit


def key_words(key: str) -> str:
    """A key and its parts as words (``SRC-OPENAI-POSTMORTEM SRC OPENAI POSTMORTEM``): a
    part of a key, or the first parts of it, are found as words and phrases."""
    return f"{key} {' '.join(key.split('-'))}"


def case_more(document: dict[str, Any]) -> str:
    """A case's further searchable text, in the order of ``MORE_FIELDS["case"]``."""
    return MORE_SEPARATOR.join(
        [
            ", ".join(document.get("tags", [])),
            " ".join(key_words(f["id"]) for f in document.get("figures", [])),
            document.get("account", ""),
            document.get("basis", ""),
        ]
    )


def source_more(document: dict[str, Any]) -> str:
    """A source's further searchable text, in the order of ``MORE_FIELDS["source"]``."""
    return MORE_SEPARATOR.join([document.get("publisher", ""), key_words(document["key"])])


def case_entries(
    document: dict[str, Any], *, scope: str, revision: int | None = None
) -> Iterator[SearchEntry]:
    """The entries of a case document: the case, then its claims."""
    key = document["key"]
    yield SearchEntry(
        scope=scope,
        kind=Kind.CASE,
        key=key,
        case_key=key,
        status=document["status"],
        title=document["title"],
        text=document["summary"],
        more=case_more(document),
        revision=revision,
    )
    for claim in document["claims"]:
        yield SearchEntry(
            scope=scope,
            kind=Kind.CLAIM,
            key=claim["id"],
            case_key=key,
            status=claim["status"],
            text=claim["statement"],
            revision=revision,
        )


def source_entry(
    document: dict[str, Any], *, scope: str, revision: int | None = None
) -> SearchEntry:
    return SearchEntry(
        scope=scope,
        kind=Kind.SOURCE,
        key=document["key"],
        status=document["status"],
        source_kind=document["kind"],
        title=document["title"],
        more=source_more(document),
        revision=revision,
    )


# The fields of a case document its search entries are made of: a write that changes none
# of them leaves the index alone.
CASE_FIELDS = ("title", "summary", "status", "claims", "tags", "figures", "account", "basis")


def index_cases(case_pks: list[int]) -> None:
    """Replace the working entries of these cases (by primary key) and their claims with
    what the live tables now hold (the cases as just written): per 500 cases, one
    ``DELETE`` and one ``INSERT … SELECT`` from the case and claim rows, so no entry is
    built in Python."""
    if not case_pks:
        return
    quote = connection.ops.quote_name
    entries, case, claim = (quote(m._meta.db_table) for m in (SearchEntry, Case, Claim))
    for start in range(0, len(case_pks), _CHUNK):
        chunk = case_pks[start : start + _CHUNK]
        among_cases, params = _among("c.id", chunk)
        among_claims, claim_params = _among("cl.case_id", chunk)
        with connection.cursor() as cursor:
            cursor.execute(
                f"DELETE FROM {entries} WHERE scope = %s AND case_key IN "
                f"(SELECT c.key FROM {case} c WHERE {among_cases})",
                [_WORKING, *params],
            )
            cursor.execute(
                f"INSERT INTO {entries} ({_COLUMNS}) "
                f"SELECT %s, %s, c.key, c.key, c.status, '', c.title, c.summary, {_NO_REVISION} "
                f"FROM {case} c WHERE {among_cases} "
                f"UNION ALL SELECT %s, %s, cl.claim_id, c.key, cl.status, '', '', cl.statement, "
                f"{_NO_REVISION} FROM {claim} cl JOIN {case} c ON c.id = cl.case_id "
                f"WHERE {among_claims}",
                [_WORKING, Kind.CASE.value, *params, _WORKING, Kind.CLAIM.value, *claim_params],
            )


def index_sources(keys: list[str]) -> None:
    """Replace the working entries of these sources with what the source table now holds:
    per 500 sources, one ``DELETE`` and one ``INSERT … SELECT``."""
    quote = connection.ops.quote_name
    entries, source = quote(SearchEntry._meta.db_table), quote(Source._meta.db_table)
    for start in range(0, len(keys), _CHUNK):
        chunk = keys[start : start + _CHUNK]
        SearchEntry.objects.filter(scope=Scope.WORKING, kind=Kind.SOURCE, key__in=chunk).delete()
        among, params = _among("s.key", chunk)
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {entries} ({_COLUMNS}) "
                f"SELECT %s, %s, s.key, '', s.status, s.kind, s.title, '', {_NO_REVISION} "
                f"FROM {source} s WHERE {among}",
                [_WORKING, Kind.SOURCE.value, *params],
            )


_WORKING = Scope.WORKING.value
_NO_REVISION = "CAST(NULL AS bigint)"  # typed, or a UNION would make it text

# The columns an entry is written with (the search vector is generated from them).
_COLUMNS = "scope, kind, key, case_key, status, source_kind, title, text, revision"


def _among(column: str, values: list[Any]) -> tuple[str, list[Any]]:
    """``column`` among ``values``: one array parameter on PostgreSQL, a list elsewhere."""
    if connection.vendor == "postgresql":
        return f"{column} = ANY(%s)", [values]
    return f"{column} IN ({', '.join(['%s'] * len(values))})", list(values)


def index_release_entries(entries: Iterable[ReleaseEntry]) -> None:
    """Make the released entries show what a release publishes: ``entries`` are the
    ``ReleaseEntry`` rows it records (all of them, or one batch; call it once per batch, in
    the publishing transaction, after the release's earlier batches).

    Only the cases and sources whose released revision changes are re-indexed: an
    ``unchanged`` entry keeps the revision the previous release published, which is
    already in the index. A withdrawn record leaves the index (the public no longer finds
    it). A fixed number of queries per 500 records; memory follows their snapshots.
    """
    changed = [
        entry
        for entry in entries
        if entry.record_kind in (Kind.CASE, Kind.SOURCE) and entry.change != ReleaseChange.UNCHANGED
    ]
    for start in range(0, len(changed), _CHUNK):
        _index_released(changed[start : start + _CHUNK])


def _index_released(entries: list[ReleaseEntry]) -> None:
    """Three queries: the snapshots, the old entries out, the new ones in."""
    revisions = Revision.objects.filter(id__in=[entry.revision_id for entry in entries])
    rows: list[SearchEntry] = []
    cases: list[str] = []
    sources: list[str] = []
    for kind, key, number, snapshot in revisions.values_list(
        "record_kind", "record_key", "number", "snapshot"
    ):
        document = json.loads(snapshot)
        if kind == Kind.CASE:
            cases.append(key)
            if document["status"] != WITHDRAWN:
                rows.extend(case_entries(document, scope=Scope.RELEASED, revision=number))
        else:
            sources.append(key)
            if document["status"] != WITHDRAWN:
                rows.append(source_entry(document, scope=Scope.RELEASED, revision=number))
    if cases:
        SearchEntry.objects.filter(scope=Scope.RELEASED, case_key__in=cases).delete()
    if sources:
        SearchEntry.objects.filter(scope=Scope.RELEASED, kind=Kind.SOURCE, key__in=sources).delete()
    SearchEntry.objects.bulk_create(rows, batch_size=_BATCH)
