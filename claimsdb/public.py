"""The released record: what releases published, read for the public (docs/releases.md).

The public sees, for each record, the revision of the latest release that has an entry for
it (``released_revision``), and only that revision's snapshot. Who reads the released
record and who the working state is decided in ``claimsdb.access``. Every list selector
here runs a fixed number of queries, whatever the number of records.

Revision URLs of released revisions never change content (``is_released_revision``;
their responses are cached for ever: ``claimsdb.http_caching``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from django.db import connections, router
from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery, Sum

from claimsdb import choices, release_facets
from claimsdb.models import Release, ReleaseChange, ReleasedTerm, ReleaseEntry, Revision
from claimsdb.records import canonical
from claimsdb.records.kinds import record_kinds
from claimsdb.records.schema import BUNDLE_FORMAT
from claimsdb.records.stream import (
    BATCH_SIZE,
    NO_PROGRESS,
    Progress,
    in_key_order,
    keyset_batches,
    reported_documents,
)
from claimsdb.selectors.scope import figure_row, scope_sections

CHANGE_VERBS: dict[str, str] = {
    ReleaseChange.NEW: "new in release",
    ReleaseChange.UPDATED: "updated in release",
    ReleaseChange.WITHDRAWN: "withdrawn in release",
}
NOT_RELEASED = "not yet released"
ITERATION_CHUNK = 500  # released records read per fetch when a list is iterated whole


class ReleasedRecord(NamedTuple):
    """A record as the public sees it: unpacks as ``(key, document, revision)``."""

    key: str
    document: dict[str, Any]
    revision: Revision


# --- releases -----------------------------------------------------------------------------


def release_list() -> QuerySet[Release]:
    """Releases, newest first (their counts by change: ``release_counts``)."""
    return Release.objects.order_by("-number")


def release_counts(release: Release) -> dict[str, int]:
    """``{"new": 3, "updated": 1, …}`` of a release: every change, counted when published."""
    return {change: release.change_counts.get(change, 0) for change in ReleaseChange.values}


def release_get(number: int) -> Release | None:
    return release_list().select_related("published_by").filter(number=number).first()


def latest_release() -> Release | None:
    return Release.objects.order_by("-number").first()


def release_entries(release: Release, *, with_snapshots: bool = False) -> list[ReleaseEntry]:
    """A release's entries (cases, sources, rules, methods; by key), each with its revision
    and ``previous_revision``: the revision number the previous release published for the
    record (None if it had none). Two queries."""
    entries = ReleaseEntry.objects.filter(release=release).select_related("revision")
    if not with_snapshots:
        entries = entries.defer("revision__snapshot")
    rows = list(entries)
    previous = {
        (kind, key): number
        for kind, key, number in ReleaseEntry.objects.filter(
            release__number=release.number - 1
        ).values_list("record_kind", "record_key", "revision__number")
    }
    for entry in rows:
        entry.previous_revision = previous.get((entry.record_kind, entry.record_key))
    rows.sort(key=lambda e: (record_kinds.listing_rank(e.record_kind), e.record_key))
    return rows


def revision_titles(revision_ids: list[int]) -> dict[int, str]:
    """The title each revision's snapshot gives its record ("" for scope rules). One query."""
    return {
        pk: canonical.loads(snapshot).get("title", "")
        for pk, snapshot in Revision.objects.filter(id__in=revision_ids).values_list(
            "id", "snapshot"
        )
    }


def release_bundle(release: Release) -> dict[str, Any]:
    """A release as a ``claimsdb.bundle/1`` held in memory (see ``release_bundle_lists``
    to stream it instead)."""
    return {
        name: value if isinstance(value, str) else list(value)
        for name, value in release_bundle_lists(release).items()
    }


def release_bundle_lists(
    release: Release, *, batch_size: int = BATCH_SIZE, progress: Progress = NO_PROGRESS
) -> dict[str, Any]:
    """A release as a ``claimsdb.bundle/1`` whose lists are lazy streams: every entry's
    snapshot (withdrawn ones too), by key, read from the ledger ``batch_size`` entries at a
    time (one query each), so it never changes and never sits whole in memory."""
    lists: dict[str, Any] = {"format": BUNDLE_FORMAT}
    entries = ReleaseEntry.objects.filter(release=release)
    for kind in record_kinds.in_bundle_file_order():
        lists[kind.plural] = reported_documents(
            kind.plural,
            entries.filter(record_kind=kind.name).count,
            in_key_order(_release_document_batches(release, kind.name, batch_size)),
            progress,
        )
    return lists


def _release_document_batches(
    release: Release, kind: str, batch_size: int
) -> Iterator[list[dict[str, Any]]]:
    entries = (
        ReleaseEntry.objects.filter(release=release, record_kind=kind)
        .select_related("revision")
        .only("record_key", "revision__snapshot")
    )
    for batch in keyset_batches(entries, field="record_key", batch_size=batch_size):
        yield [canonical.loads(entry.revision.snapshot) for entry in batch]


# --- what the public sees ----------------------------------------------------------------


def _release_number(release: Release | int | None) -> int | None:
    return release.number if isinstance(release, Release) else release


def released_entry(
    kind: str, key: str, release: Release | int | None = None
) -> ReleaseEntry | None:
    """The entry the public sees for a record (as of ``release``, else now), or None."""
    entries = ReleaseEntry.objects.filter(record_kind=kind, record_key=key)
    number = _release_number(release)
    if number is not None:
        entries = entries.filter(release__number__lte=number)
    return entries.select_related("revision", "release").order_by("-release__number").first()


def released_revision(kind: str, key: str, release: Release | int | None = None) -> Revision | None:
    """The revision the public sees: from the latest release (up to ``release``) that has
    an entry for the record. None if it was never released."""
    entry = released_entry(kind, key, release)
    return entry.revision if entry else None


def released_document(kind: str, key: str) -> dict[str, Any] | None:
    """The document the public sees (its released snapshot), or None."""
    revision = released_revision(kind, key)
    return canonical.loads(revision.snapshot) if revision else None


def _public_release(release: Release | int | None = None) -> Subquery:
    """The release whose entries are the public set as of ``release`` (else now): the
    latest one up to it. Every release has an entry for every record released so far
    (records back in draft keep theirs), so its entries alone are the public record."""
    releases = Release.objects.order_by("-number")
    number = _release_number(release)
    if number is not None:
        releases = releases.filter(number__lte=number)
    return Subquery(releases.values("pk")[:1])


def _released_entries(kind: str, release: Release | int | None = None) -> QuerySet[ReleaseEntry]:
    """For each record of ``kind``, the entry of the latest release (up to ``release``, else
    now) that has one: the entries of that release, read along its (release, record_kind,
    record_key) index."""
    return ReleaseEntry.objects.filter(release=_public_release(release), record_kind=kind)


class ReleasedRecords:
    """Released records of one kind, by key, read lazily: ``count()``/``len()`` and slices
    each cost one query (what ``Paginator`` asks of a list), iterating streams them.

    Items are ``ReleasedRecord``s, or what ``wrap`` makes of them. ``entries`` is the
    underlying queryset of ``ReleaseEntry`` (with their revisions): narrow it with
    ``with_entries`` (the API's released filters do).
    """

    ordered = True  # Paginator warns about unordered lists

    def __init__(
        self,
        entries: QuerySet[ReleaseEntry],
        wrap: Callable[[ReleasedRecord], Any] | None = None,
    ) -> None:
        self.entries = entries
        self.wrap = wrap

    def with_entries(self, entries: QuerySet[ReleaseEntry]) -> ReleasedRecords:
        return ReleasedRecords(entries, self.wrap)

    def wrapped(self, wrap: Callable[[ReleasedRecord], Any]) -> ReleasedRecords:
        return ReleasedRecords(self.entries, wrap)

    def _item(self, entry: ReleaseEntry) -> Any:
        record = ReleasedRecord(
            entry.record_key, canonical.loads(entry.revision.snapshot), entry.revision
        )
        return self.wrap(record) if self.wrap else record

    def count(self) -> int:
        return self.entries.count()

    def __len__(self) -> int:
        return self.count()

    def __bool__(self) -> bool:
        return self.entries.exists()

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self._item(entry) for entry in self.entries[index]]
        return self._item(self.entries[index])

    def __iter__(self) -> Iterator[Any]:
        for entry in self.entries.iterator(chunk_size=ITERATION_CHUNK):
            yield self._item(entry)


def released_records(kind: str, *, include_withdrawn: bool = False) -> ReleasedRecords:
    """The released records of ``kind`` as the public sees them, by key: a lazy sequence
    (``ReleasedRecords``) over one indexed query on the latest release's entries.

    Withdrawn records are left out unless ``include_withdrawn`` (their pages still show
    them, marked withdrawn).
    """
    entries = _released_entries(kind).select_related("revision").order_by("record_key")
    if not include_withdrawn:
        entries = entries.filter(withdrawn=False)
    return ReleasedRecords(entries)


def released_cases(
    *,
    tag: str = "",
    values: dict[str, str] | None = None,
    component: str = "",
    affected_status: str = "",
) -> ReleasedRecords:
    """The released cases (withdrawn ones left out) carrying ``tag`` whose current
    assessment has every dimension value of ``values``, by key: filtered in the database
    through what each release recorded of its revisions (``ReleasedTerm``), so that a page
    of them reads the snapshots of its own cases only."""
    records = released_records("case")
    entries = records.entries
    if tag:
        entries = entries.filter(_has_term("tag", [tag]))
    for dimension, value in sorted((values or {}).items()):
        entries = entries.filter(
            _has_term("current", [release_facets.dimension_value(dimension, value)])
        )
    if component and affected_status:
        entries = entries.filter(_has_term("component_status", [f"{component}:{affected_status}"]))
    elif component:
        entries = entries.filter(_has_term("component", [component]))
    elif affected_status:
        terms = ReleasedTerm.objects.filter(
            revision=OuterRef("revision"),
            name="component_status",
            value__endswith=f":{affected_status}",
        )
        entries = entries.filter(Exists(terms))
    return records.with_entries(entries)


def released_cases_naming(component_key: str) -> ReleasedRecords:
    """The released cases (withdrawn ones left out) whose affected list names a component,
    by key: through the ``component`` terms a release records, so a page reads the
    snapshots of its own cases only."""
    records = released_records("case")
    return records.with_entries(records.entries.filter(_has_term("component", [component_key])))


def released_tags() -> list[str]:
    """Every tag of a released case (withdrawn ones left out), sorted.

    On PostgreSQL by skipping along the (name, value) index of ``ReleasedTerm`` from one tag
    to the next, keeping those some case of the public release carries (the first of the
    tag's terms whose revision the release publishes): a few index probes per tag, where
    reading the released cases would parse every snapshot on each page of the list. A tag
    whose terms are mostly of revisions later ones replaced costs a probe per such term."""
    entries = _released_entries("case").filter(withdrawn=False)
    connection = connections[router.db_for_read(ReleasedTerm)]
    if connection.vendor != "postgresql":
        terms = ReleasedTerm.objects.filter(name="tag", revision__in=entries.values("revision"))
        return list(terms.order_by("value").values_list("value", flat=True).distinct())
    quote = connection.ops.quote_name
    term = quote(ReleasedTerm._meta.db_table)
    entry = quote(ReleaseEntry._meta.db_table)
    release = quote(Release._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH RECURSIVE tags(value) AS ("
            f"(SELECT value FROM {term} WHERE name = 'tag' ORDER BY value LIMIT 1) UNION ALL "
            f"SELECT (SELECT value FROM {term} WHERE name = 'tag' AND value > tags.value "
            f"ORDER BY value LIMIT 1) FROM tags WHERE tags.value IS NOT NULL) "
            # LATERAL … LIMIT 1: one probe per tag (a semi-join would read every entry)
            f"SELECT tags.value FROM tags CROSS JOIN LATERAL ("
            f"SELECT 1 FROM {term} t JOIN {entry} e ON e.revision_id = t.revision_id "
            f"WHERE t.name = 'tag' AND t.value = tags.value AND e.record_kind = 'case' "
            f"AND NOT e.withdrawn AND e.release_id = "
            f"(SELECT id FROM {release} ORDER BY number DESC LIMIT 1) LIMIT 1) carried "
            f"WHERE tags.value IS NOT NULL"
        )
        return [value for (value,) in cursor.fetchall()]


# --- what a released page shows around its record ----------------------------------------
# A released record page shows the records it names (sources, methods, scope rules, other
# cases' figures and relations) as a release published them, never as they are being edited.
# ``release`` pins them to one release (the page of a released revision never changes);
# without it, the latest. One query each, whatever the number of records.


def released_documents(
    kind: str, keys: set[str] | list[str], release: Release | int | None = None
) -> dict[str, dict[str, Any]]:
    """The released documents of the named records of ``kind``, by key (withdrawn ones
    included; records never released are left out)."""
    keys = set(keys)
    if not keys:
        return {}
    rows = (
        _released_entries(kind, release)
        .filter(record_key__in=keys)
        .values_list("record_key", "revision__snapshot")
    )
    return {key: canonical.loads(snapshot) for key, snapshot in rows}


def _released_where(
    kind: str,
    condition: Q,
    release: Release | int | None = None,
    *,
    include_withdrawn: bool = False,
) -> list[ReleasedRecord]:
    """Released records of ``kind`` meeting ``condition`` on their entries (through what a
    release records of each revision: ``ReleasedRevision``, ``ReleasedTerm``), by key: the
    few records a page shows around its own, found through indexes. The caller checks
    their documents."""
    entries = _released_entries(kind, release).filter(condition)
    if not include_withdrawn:
        entries = entries.filter(withdrawn=False)
    return list(ReleasedRecords(entries.select_related("revision").order_by("record_key")))


def _has_term(name: str, values: list[str]) -> Q:
    """The entry's revision has a ``ReleasedTerm`` ``name`` with one of ``values``."""
    terms = ReleasedTerm.objects.filter(revision=OuterRef("revision"), name=name)
    return Q(Exists(terms.filter(value__in=values)))


def released_figures(
    figure_ids: set[str] | list[str], release: Release | int | None = None
) -> dict[str, dict[str, Any]]:
    """The named figures as the released documents of their cases give them
    (``figure_row``), by ID."""
    wanted = set(figure_ids)
    if not wanted:
        return {}
    cases = _released_where(
        "case", _has_term("figure", sorted(wanted)), release, include_withdrawn=True
    )
    return {
        figure["id"]: figure_row(figure, key)
        for key, document, _ in cases
        for figure in document["figures"]
        if figure["id"] in wanted
    }


def released_scope(
    document: dict[str, Any], release: Release | int | None = None
) -> dict[str, Any]:
    """``scope_of_document`` from a release: its active scope rules naming the case
    or its figures, the figures they name, and the directed relations of its other cases
    pointing at this one. Three queries."""
    key = document["key"]
    own = [f["id"] for f in document["figures"]]
    rules = [
        rule
        for _, rule, _ in _released_where(
            "rule",
            Q(revision__released__case=key) | Q(revision__released__figure__in=own),
            release,
        )
        if rule["status"] == "active" and (rule["case"] == key or rule["figure"] in own)
    ]
    wanted = {r["figure"] for r in rules} | {a["figure"] for a in document["attributions"]}
    incoming = sorted(
        (
            {"case": other, "kind": relation["kind"], "note": relation["note"]}
            for other, other_document, _ in _released_where(
                "case", _has_term("related", [key]), release
            )
            if other != key
            for relation in other_document["relations"]
            if relation["case"] == key and relation["kind"] not in choices.SYMMETRIC_RELATIONS
        ),
        key=lambda relation: (relation["case"], relation["kind"]),
    )
    return scope_sections(document, rules, released_figures(wanted, release), incoming)


def released_citations(source_key: str) -> list[dict[str, Any]]:
    """The claims of released cases with an evidence link to a source, by case and in each
    case's order: ``{"case", "claim_id", "statement", "relation", "locator", "withdrawn"}``."""
    return [
        {
            "case": case_key,
            "claim_id": claim["id"],
            "statement": claim["statement"],
            "relation": link["relation"],
            "locator": link["locator"],
            "withdrawn": claim["status"] == "withdrawn",
        }
        for case_key, document, _ in _released_where("case", _has_term("source", [source_key]))
        for claim in document["claims"]
        for link in claim["evidence"]
        if link["source"] == source_key
    ]


def released_link_counts(source_keys: Iterable[str] | None = None) -> dict[str, int]:
    """How many evidence links of released (not withdrawn) cases cite each source, by
    source key, leaving out the links of withdrawn claims: of the named sources only, if
    given (a page of them). One query."""
    cases = _released_entries("case").filter(withdrawn=False).values("revision_id")
    terms = ReleasedTerm.objects.filter(name="source", revision_id__in=cases)
    if source_keys is not None:
        terms = terms.filter(value__in=list(source_keys))
    rows = terms.values("value").annotate(links=Sum("number")).values_list("value", "links")
    return dict(rows)


def is_released_revision(number: int) -> Release | None:
    """The first release that published revision ``number``, or None.

    A released revision's pages never change: they may be cached for ever.
    """
    entry = (
        ReleaseEntry.objects.filter(revision__number=number)
        .select_related("release")
        .order_by("release__number")
        .first()
    )
    return entry.release if entry else None


def release_of_revision(kind: str, key: str, number: int) -> Release | None:
    """The first release whose entry for this record points at revision ``number``."""
    entry = (
        ReleaseEntry.objects.filter(record_kind=kind, record_key=key, revision__number=number)
        .select_related("release")
        .order_by("release__number")
        .first()
    )
    return entry.release if entry else None


def material_history(kind: str, key: str, *, public: bool) -> list[dict[str, Any]]:
    """A record's material revisions, newest first, each with the release that made it
    public: ``{"date", "created_at", "dated_on", "action", "material", "summary", "author",
    "changed", "revision", "release", "release_date", "change", "published",
    "release_label"}`` (``release_label``: "new in release 12", "updated in release 13",
    "withdrawn in release 14" or "not yet released"; ``release_date`` when it was published;
    ``dated_on`` and ``changed`` as the revision stores them).

    A revision counts as released by the first release publishing it or a later revision
    of the record (an intermediate revision's change became public with the later one).
    ``published`` is True when a release points at this very revision: only then may
    anonymous readers open its page (link it only then).
    ``public=True`` lists only revisions up to the one the public sees (none if the record
    was never released). Two queries.
    """
    entries = list(
        ReleaseEntry.objects.filter(record_kind=kind, record_key=key)
        .order_by("release__number")
        .values_list("release__number", "revision__number", "change", "release__published_at")
    )
    published = {number for _, number, _, _ in entries}
    revisions = (
        Revision.objects.filter(record_kind=kind, record_key=key, material=True)
        .order_by("-number")
        .values_list(
            "number", "action", "created_at", "dated_on", "summary", "author__username", "changed"
        )
    )
    if public:
        if not entries:
            return []
        revisions = revisions.filter(number__lte=entries[-1][1])
    history = []
    for number, action, created_at, dated_on, summary, author, changed in revisions:
        release, change, published_at = next(
            ((r, c, at) for r, n, c, at in entries if n >= number and c != ReleaseChange.UNCHANGED),
            (None, None, None),
        )
        history.append(
            {
                "date": created_at.astimezone(dt.UTC).date(),
                "created_at": created_at,
                "dated_on": dated_on,
                "action": action,
                "material": True,
                "summary": summary,
                "author": author,
                "changed": changed,
                "revision": number,
                "release": release,
                "release_date": published_at.astimezone(dt.UTC).date() if published_at else None,
                "change": change,
                "published": number in published,
                "release_label": f"{CHANGE_VERBS[change]} {release}" if change else NOT_RELEASED,
            }
        )
    return history
