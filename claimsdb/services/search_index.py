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
import re
from collections.abc import Iterable, Iterator
from typing import Any

from claimsdb.models import ReleaseChange, ReleaseEntry, Revision, SearchEntry
from claimsdb.models import SearchKind as Kind
from claimsdb.models import SearchScope as Scope
from claimsdb.models.search import MORE_SEPARATOR

from .rows import insert_tuples

WITHDRAWN = "withdrawn"
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


# The columns of an entry as the functions below give it: a tuple in this order (a load
# indexes tens of thousands of entries, and a model instance per entry cost more than
# writing it: ``services.rows``).
ENTRY_FIELDS = (
    "scope",
    "kind",
    "key",
    "case_key",
    "status",
    "source_kind",
    "title",
    "text",
    "more",
    "revision",
)
Entry = tuple[str, str, str, str, str, str, str, str, str, int | None]


def case_entries(
    document: dict[str, Any], *, scope: str, revision: int | None = None
) -> Iterator[Entry]:
    """The entries of a case document: the case, then its claims."""
    key = document["key"]
    yield (
        scope,
        Kind.CASE,
        key,
        key,
        document["status"],
        "",
        document["title"],
        document["summary"],
        case_more(document),
        revision,
    )
    for claim in document["claims"]:
        yield (
            scope,
            Kind.CLAIM,
            claim["id"],
            key,
            claim["status"],
            "",
            "",
            claim["statement"],
            "",
            revision,
        )


def source_entry(document: dict[str, Any], *, scope: str, revision: int | None = None) -> Entry:
    return (
        scope,
        Kind.SOURCE,
        document["key"],
        "",
        document["status"],
        document["kind"],
        document["title"],
        "",
        source_more(document),
        revision,
    )


def component_more(document: dict[str, Any]) -> str:
    """A component's further searchable text, in the order of ``MORE_FIELDS["component"]``:
    its aliases, its Package URL (with its parts as words) and its key."""
    purl = document.get("purl", "")
    return MORE_SEPARATOR.join(
        [
            ", ".join(document.get("aliases", [])),
            f"{purl} {' '.join(re.split(r'[:/@?#]+', purl))}".strip(),
            key_words(document["key"]),
        ]
    )


def component_entry(document: dict[str, Any], *, scope: str, revision: int | None = None) -> Entry:
    return (
        scope,
        Kind.COMPONENT,
        document["key"],
        "",
        document["status"],
        document["kind"],  # the component's kind, shown beside a hit
        document["name"],
        "",
        component_more(document),
        revision,
    )


# The fields of a case document its search entries are made of: a write that changes none
# of them leaves the index alone.
CASE_FIELDS = ("title", "summary", "status", "claims", "tags", "figures", "account", "basis")


def index_cases(documents: list[dict[str, Any]]) -> None:
    """Replace the working entries of these cases and their claims with those of the
    documents (the cases as just written). A fixed number of queries per 500 cases."""
    for start in range(0, len(documents), _CHUNK):
        chunk = documents[start : start + _CHUNK]
        SearchEntry.objects.filter(
            scope=Scope.WORKING, case_key__in=[d["key"] for d in chunk]
        ).delete()
        insert_tuples(
            SearchEntry,
            ENTRY_FIELDS,
            [e for d in chunk for e in case_entries(d, scope=Scope.WORKING)],
        )


def index_sources(documents: list[dict[str, Any]]) -> None:
    """Replace the working entries of these sources with those of the documents."""
    for start in range(0, len(documents), _CHUNK):
        chunk = documents[start : start + _CHUNK]
        SearchEntry.objects.filter(
            scope=Scope.WORKING, kind=Kind.SOURCE, key__in=[d["key"] for d in chunk]
        ).delete()
        insert_tuples(
            SearchEntry, ENTRY_FIELDS, [source_entry(d, scope=Scope.WORKING) for d in chunk]
        )


def index_components(documents: list[dict[str, Any]]) -> None:
    """Replace the working entries of these components with those of the documents."""
    for start in range(0, len(documents), _CHUNK):
        chunk = documents[start : start + _CHUNK]
        SearchEntry.objects.filter(
            scope=Scope.WORKING, kind=Kind.COMPONENT, key__in=[d["key"] for d in chunk]
        ).delete()
        insert_tuples(
            SearchEntry, ENTRY_FIELDS, [component_entry(d, scope=Scope.WORKING) for d in chunk]
        )


# The kinds of record the search index holds entries of (claims come with their cases).
_INDEXED = (Kind.CASE, Kind.SOURCE, Kind.COMPONENT)


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
        if entry.record_kind in _INDEXED and entry.change != ReleaseChange.UNCHANGED
    ]
    for start in range(0, len(changed), _CHUNK):
        _index_released(changed[start : start + _CHUNK])


def _index_released(entries: list[ReleaseEntry]) -> None:
    """A few queries: the snapshots, the old entries out (per kind), the new ones in."""
    revisions = Revision.objects.filter(id__in=[entry.revision_id for entry in entries])
    rows: list[Entry] = []
    cases: list[str] = []
    others: dict[str, list[str]] = {Kind.SOURCE: [], Kind.COMPONENT: []}
    for kind, key, number, snapshot in revisions.values_list(
        "record_kind", "record_key", "number", "snapshot"
    ):
        document = json.loads(snapshot)
        if kind == Kind.CASE:
            cases.append(key)
            if document["status"] != WITHDRAWN:
                rows.extend(case_entries(document, scope=Scope.RELEASED, revision=number))
        else:
            others[kind].append(key)
            if document["status"] != WITHDRAWN:
                entry = source_entry if kind == Kind.SOURCE else component_entry
                rows.append(entry(document, scope=Scope.RELEASED, revision=number))
    if cases:
        SearchEntry.objects.filter(scope=Scope.RELEASED, case_key__in=cases).delete()
    for kind, keys in others.items():
        if keys:
            SearchEntry.objects.filter(scope=Scope.RELEASED, kind=kind, key__in=keys).delete()
    insert_tuples(SearchEntry, ENTRY_FIELDS, rows)
