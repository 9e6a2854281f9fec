"""A release as a STIX 2.1 bundle (docs/exports.md, "STIX 2.1").

Every object is built with the ``stix2`` library, which checks its properties; the bundle
around them is written here, one object per line, a batch of records at a time, so a
release of any size streams in the memory of one batch (a ``stix2.Bundle`` would hold
every object at once).

The same release always gives the same bytes: every identifier is a UUIDv5 of a fixed
namespace and the record's key (or claim ID, or relation), every time comes from the
ledger (a record's first revision is its ``created``, the revision the release published
its ``modified``; the release's own time for the release), objects come in a fixed order
and are written with sorted keys. What a kind becomes is its entry's ``stix_mapping`` in
the registry of record kinds (``claimsdb.records.kinds``); a kind without one is carried
whole by ``generic_objects``.
"""

from __future__ import annotations

import datetime as dt
import functools
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

from django.conf import settings
from django.utils.module_loading import import_string
from stix2.v21 import (
    ExtensionDefinition,
    ExternalReference,
    Identity,
    Incident,
    Note,
    Relationship,
    Report,
)

from claimsdb import choices
from claimsdb.models import Release, ReleaseEntry
from claimsdb.records import canonical
from claimsdb.records.kinds import RecordKind, record_kinds
from claimsdb.records.stream import BATCH_SIZE, NO_PROGRESS, Progress

from .released import ReleasedVersion, release_count, release_version_batches, utc

# uuid5(NAMESPACE_URL, "urn:claimsdb:stix"): the namespace of every identifier claimsdb
# gives a STIX object. Fixed for ever: changing it would give every object a new identity.
NAMESPACE = uuid.UUID("3fdb6756-4dfd-52b8-a969-17858817e938")
# The version of the claimsdb extension, and the day it was defined: the extension
# definition's (and claimsdb's identity's) ``created`` and ``modified``.
EXTENSION_VERSION = "1.0.0"
DEFINED = dt.datetime(2026, 12, 4, tzinfo=dt.UTC)
EXTENSION_NAME = "claimsdb record"
# The extension's JSON Schema, served at /api/v1/stix/extension-schema.json.
EXTENSION_SCHEMA_PATH = Path(__file__).with_name("stix-extension-schema.json")
# What every object's claimsdb reference is called in ``external_references``.
SOURCE_NAME = "claimsdb"

# a stix2 object (``Incident``, ``Note``…); stix2 ships no types, so Any to the type check
StixObject: TypeAlias = Any
Mapping = Callable[[list[ReleasedVersion], "StixContext"], Iterator[StixObject]]


def stix_id(stix_type: str, name: str) -> str:
    """The identifier of the ``stix_type`` object claimsdb makes of ``name``
    (``case:CP22-003``, ``claim:CLM-CP22-003-A``…): the same in every export."""
    return f"{stix_type}--{uuid.uuid5(NAMESPACE, name)}"


IDENTITY_ID = stix_id("identity", "identity:claimsdb")
EXTENSION_ID = stix_id("extension-definition", f"extension:claimsdb-record/{EXTENSION_VERSION}")


def schema_url() -> str:
    """Where the extension's JSON Schema is (``STIX_EXTENSION_SCHEMA_URL``)."""
    return str(settings.STIX_EXTENSION_SCHEMA_URL)


def incident_id(case_key: str) -> str:
    return stix_id("incident", f"case:{case_key}")


def claim_note_id(claim_id: str) -> str:
    return stix_id("note", f"claim:{claim_id}")


def source_report_id(source_key: str) -> str:
    return stix_id("report", f"source:{source_key}")


def bundle_id(release_number: int) -> str:
    return stix_id("bundle", f"release:{release_number}")


@dataclass
class StixContext:
    """What a mapping may ask about the release beside its batch: a fixed number of queries
    per batch."""

    release: Release

    def documents(self, kind: str, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The release's documents of the named records of ``kind`` (one query)."""
        wanted = set(keys)
        if not wanted:
            return {}
        rows = ReleaseEntry.objects.filter(
            release=self.release, record_kind=kind, record_key__in=wanted
        ).values_list("record_key", "revision__snapshot")
        return {key: canonical.loads(snapshot) for key, snapshot in rows}

    def released_keys(self, kind: str, keys: Iterable[str]) -> set[str]:
        """Which of the named records of ``kind`` the release has (one query)."""
        wanted = set(keys)
        if not wanted:
            return set()
        return set(
            ReleaseEntry.objects.filter(
                release=self.release, record_kind=kind, record_key__in=wanted
            ).values_list("record_key", flat=True)
        )


def extension(record_kind: str, record_key: str, revision: int, fields: dict[str, Any]) -> dict:
    """The claimsdb property extension: which record (and revision) an object comes from,
    and the fields of its canonical document no STIX property carries."""
    return {
        EXTENSION_ID: {
            "extension_type": "property-extension",
            "record_kind": record_kind,
            "record_key": record_key,
            "revision": revision,
            "fields": fields,
        }
    }


def claimsdb_reference(kind: RecordKind | str, key: str) -> StixObject:
    """The external reference naming the record in claimsdb (its page's path)."""
    entry = record_kinds.get(kind) if isinstance(kind, str) else kind
    return reference(SOURCE_NAME, key, entry.record_path(key), "")


@functools.lru_cache(maxsize=4096)
def reference(source_name: str, external_id: str, description: str, url: str) -> StixObject:
    """An ``ExternalReference``, made once for the many objects that name it (a case's
    incident, report and notes name their case): stix2 checks each one it is given as a
    mapping, which costs as much as a small object. Immutable, so shared safely; the cache
    is bounded."""
    return ExternalReference(
        **optional(source_name=source_name, external_id=external_id, description=description),
        **optional(url=url),
    )


def versioned(version: ReleasedVersion) -> dict[str, Any]:
    """The common properties of an object made of ``version``."""
    common: dict[str, Any] = {
        "created": version.created,
        "modified": version.modified,
        "created_by_ref": IDENTITY_ID,
    }
    if version.withdrawn:
        common["revoked"] = True
    return common


def without(document: dict[str, Any], *names: str) -> dict[str, Any]:
    return {name: value for name, value in document.items() if name not in names}


def text_or(value: str, fallback: str) -> str:
    return value if value.strip() else fallback


def optional(**properties: Any) -> dict[str, Any]:
    """The properties that have a value: STIX leaves an absent property out, not empty."""
    return {name: value for name, value in properties.items() if value not in ("", [], None)}


# --- the objects of every bundle --------------------------------------------------------


def identity() -> Identity:
    return Identity(
        id=IDENTITY_ID,
        created=DEFINED,
        modified=DEFINED,
        name="claimsdb",
        identity_class="system",
        description="A knowledge base of incidents and research demonstrations in AI "
        "infrastructure, kept as claims with evidence, assessments and a tamper-evident "
        "history.",
    )


def extension_definition() -> ExtensionDefinition:
    return ExtensionDefinition(
        id=EXTENSION_ID,
        created=DEFINED,
        modified=DEFINED,
        created_by_ref=IDENTITY_ID,
        name=EXTENSION_NAME,
        description="The claimsdb record an object comes from (kind, key, revision) and the "
        "fields of its canonical document that no STIX property carries: a case's scope "
        "note, account, assessments, figures, attributions, controls and unknowns; a "
        "claim's status and basis; a source's kind and reliability; a scope rule.",
        schema=schema_url(),
        version=EXTENSION_VERSION,
        extension_types=["property-extension"],
    )


def release_note(release: Release) -> Note:
    published = utc(release.published_at)
    summary = f"claimsdb release {release.number}"
    return Note(
        id=stix_id("note", f"release:{release.number}"),
        created=published,
        modified=published,
        created_by_ref=IDENTITY_ID,
        abstract=summary,
        content=text_or(release.notes, summary),
        object_refs=[IDENTITY_ID],
        extensions=extension(
            "release",
            str(release.number),
            release.last_revision,
            {
                "number": release.number,
                "published_at": published.isoformat().replace("+00:00", "Z"),
                "notes": release.notes,
                "last_revision": release.last_revision,
                "counts": {name: release.change_counts.get(name, 0) for name in COUNTED},
            },
        ),
    )


COUNTED = ("new", "updated", "withdrawn", "unchanged")


# --- the mappings of each kind ----------------------------------------------------------


def case_objects(versions: list[ReleasedVersion], context: StixContext) -> Iterator[StixObject]:
    """A case: an ``incident`` (the event, with the case's own fields in the extension),
    a ``note`` per claim (evidence as external references carrying locators), a
    ``relationship`` per relation, and a ``report`` gathering them."""
    cited = {
        link["source"]
        for version in versions
        for claim in version.document["claims"]
        for link in claim["evidence"]
    }
    sources = context.documents("source", cited)
    others = {
        relation["case"]
        for version in versions
        for relation in version.document["relations"]
        if relation["kind"] in choices.SYMMETRIC_RELATIONS
    }
    released_others = context.released_keys("case", others)
    for version in versions:
        document, key = version.document, version.key
        common = versioned(version)
        incident = Incident(
            id=incident_id(key),
            name=text_or(document["title"], key),
            external_references=[claimsdb_reference("case", key)],
            extensions=extension(
                "case",
                key,
                version.revision,
                without(document, "format", "key", "title", "summary", "tags", "claims"),
            ),
            **optional(description=document["summary"], labels=document["tags"]),
            **common,
        )
        yield incident
        parts: list[str] = [incident.id]
        for claim in document["claims"]:
            note = claim_note(claim, key, version, sources)
            parts.append(note.id)
            yield note
        for relation in document["relations"]:
            # a symmetric relation made with the other case is still one of this case's parts
            parts.append(relation_id(key, relation))
            made = relationship(key, relation, version, released_others)
            if made is not None:
                yield made
        cited_here = sorted(
            {link["source"] for claim in document["claims"] for link in claim["evidence"]}
        )
        yield Report(
            id=stix_id("report", f"case:{key}"),
            name=text_or(document["title"], key),
            published=version.modified,
            report_types=["threat-report"],
            object_refs=parts + [source_report_id(source) for source in cited_here],
            external_references=[claimsdb_reference("case", key)],
            **optional(description=document["summary"]),
            **common,
        )


def claim_note(
    claim: dict[str, Any],
    case_key: str,
    version: ReleasedVersion,
    sources: dict[str, dict[str, Any]],
) -> Note:
    """A claim: its statement as the note's content, about its case's incident and the
    sources its evidence cites; each evidence link an external reference."""
    references = []
    for link in claim["evidence"]:
        source = sources.get(link["source"], {})
        references.append(
            reference(
                link["source"],
                "",
                text_or(f"{link['relation']}: {link['locator']}".strip(), link["relation"]),
                source.get("url", ""),
            )
        )
    common = versioned(version)
    if claim["status"] == choices.ClaimStatus.WITHDRAWN:
        common["revoked"] = True
    cited = list(dict.fromkeys(link["source"] for link in claim["evidence"]))
    return Note(
        id=claim_note_id(claim["id"]),
        abstract=claim["id"],
        content=text_or(claim["statement"], claim["id"]),
        object_refs=[incident_id(case_key)] + [source_report_id(source) for source in cited],
        external_references=[claimsdb_reference("case", case_key), *references],
        extensions=extension("claim", claim["id"], version.revision, {"case": case_key, **claim}),
        **common,
    )


def relation_id(case_key: str, relation: dict[str, Any]) -> str:
    """The identifier of a relation: of its two cases in key order if its kind is
    symmetric, so that both cases' documents name one relationship."""
    other, kind = relation["case"], relation["kind"]
    if kind in choices.SYMMETRIC_RELATIONS:
        case_key, other = sorted([case_key, other])
    return stix_id("relationship", f"relation:{case_key}:{kind}:{other}")


def relationship(
    case_key: str,
    relation: dict[str, Any],
    version: ReleasedVersion,
    released_others: set[str],
) -> Relationship | None:
    """A relation between two cases. A symmetric one (``same_event``,
    ``related_distinct``) is on both cases' documents: it is made once, from the case of the
    lower key, or from the other if that case is not in the release."""
    other, kind = relation["case"], relation["kind"]
    if kind in choices.SYMMETRIC_RELATIONS and case_key > other and other in released_others:
        return None
    return Relationship(
        id=relation_id(case_key, relation),
        relationship_type=kind.replace("_", "-"),
        source_ref=incident_id(case_key),
        target_ref=incident_id(other),
        extensions=extension("case", case_key, version.revision, {"relation": relation}),
        **optional(description=relation["note"]),
        **versioned(version),
    )


def source_objects(versions: list[ReleasedVersion], context: StixContext) -> Iterator[StixObject]:
    """A source: a ``report`` (published on its publication date, else when the release
    published it) with its URL as an external reference; the claims citing it name it."""
    for version in versions:
        document, key = version.document, version.key
        references = [claimsdb_reference("source", key)]
        if document["url"]:
            references.append(
                reference(text_or(document["publisher"], key), "", "", document["url"])
            )
        published = version.modified
        if document["published_on"]:
            published = dt.datetime.fromisoformat(document["published_on"]).replace(tzinfo=dt.UTC)
        yield Report(
            id=source_report_id(key),
            name=text_or(document["title"], key),
            published=published,
            report_types=["threat-report"],
            object_refs=[IDENTITY_ID],
            external_references=references,
            extensions=extension(
                "source", key, version.revision, without(document, "format", "key", "title")
            ),
            **optional(description=document["notes"]),
            **versioned(version),
        )


def rule_objects(versions: list[ReleasedVersion], context: StixContext) -> Iterator[StixObject]:
    """A scope rule: a ``note`` on the incident of the case it protects, its reason as the
    content, the rule itself in the extension."""
    for version in versions:
        document, key = version.document, version.key
        yield Note(
            id=stix_id("note", f"rule:{key}"),
            abstract=f"Scope rule {key}",
            content=text_or(
                document["reason"],
                f"{document['figure']} must not be attributed to {document['case']}",
            ),
            object_refs=[incident_id(document["case"])],
            external_references=[claimsdb_reference("rule", key)],
            extensions=extension("rule", key, version.revision, without(document, "format", "key")),
            **versioned(version),
        )


def generic_objects(versions: list[ReleasedVersion], context: StixContext) -> Iterator[StixObject]:
    """A record of a kind without a mapping of its own (assessment methods, components, and
    any kind registered without one): a ``note`` about claimsdb carrying its whole
    document, its title (or name) as the content."""
    for version in versions:
        entry = record_kinds.get(version.kind)
        document, key = version.document, version.key
        # the record's title, or its name (a component's)
        title = str(document.get("title", "") or document.get("name", "") or "")
        yield Note(
            id=stix_id("note", f"{entry.name}:{key}"),
            abstract=f"{entry.label} {key}",
            content=text_or(title, f"{entry.label} {key}"),
            object_refs=[IDENTITY_ID],
            external_references=[claimsdb_reference(entry, key)],
            extensions=extension(entry.name, key, version.revision, without(document, "format")),
            **versioned(version),
        )


def mapping_of(kind: RecordKind) -> Mapping:
    """The kind's STIX mapping (its registry entry's ``stix_mapping``), else the generic."""
    mapping: Mapping = import_string(kind.stix_mapping) if kind.stix_mapping else generic_objects
    return mapping


# --- the bundle -------------------------------------------------------------------------


def release_stix_objects(
    release: Release, *, batch_size: int = BATCH_SIZE, progress: Progress = NO_PROGRESS
) -> Iterator[StixObject]:
    """Every object of the release's bundle, in bundle order: claimsdb's identity, the
    extension's definition, the release, then each kind's records in listing order and
    key order."""
    yield identity()
    yield extension_definition()
    yield release_note(release)
    context = StixContext(release)
    for kind in record_kinds:
        mapping = mapping_of(kind)
        progress.begin(kind.plural, release_count(release, kind.name))
        for versions in release_version_batches(release, kind.name, batch_size=batch_size):
            yield from mapping(versions, context)
            progress.advance(len(versions))
        progress.end()


def serialize(obj: StixObject) -> str:
    """One object as the bundle writes it: compact JSON, keys sorted, UTF-8 as is."""
    text: str = obj.serialize(sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return text


def iter_stix_bundle(
    release: Release, *, batch_size: int = BATCH_SIZE, progress: Progress = NO_PROGRESS
) -> Iterator[str]:
    """The release's STIX 2.1 bundle as text, in pieces: one object per line, read and
    written a batch of records at a time."""
    yield '{"id":"' + bundle_id(release.number) + '","objects":['
    separator = "\n"
    for obj in release_stix_objects(release, batch_size=batch_size, progress=progress):
        yield separator + serialize(obj)
        separator = ",\n"
    yield '\n],"type":"bundle"}\n'
