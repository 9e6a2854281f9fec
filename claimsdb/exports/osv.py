"""A release's affected components as OSV documents (OSV schema 1.6; docs/coverage.md).

Every case of the release whose ``affected`` list names a component with a Package URL
becomes one OSV document, ``CLAIMSDB-<case key>``: its title the ``summary``, its summary,
scope note and limits the ``details``, each such component an ``affected[]`` entry
(``package`` from the Package URL, the ranges and versions the case states), the sources
its claims cite the ``references``, its relations to other cases ``related``, and, for a
case the release withdraws, ``withdrawn``. What OSV has no field for — the status of the
entry, the claims it rests on, the note — is kept under ``database_specific``.

Everything is read from the release's ledger snapshots, never the live tables, so a release
exports the same documents on any database at any time. The cases are read a batch at a
time in key order, with a fixed number of queries per batch (the cases' entries with their
snapshots; the components and sources they name, as the release published them; when each
case was first released), so memory follows the batch size, not the release.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Iterator
from typing import Any

from django.db.models import Min
from packageurl import PackageURL

from claimsdb.models import Release, ReleaseEntry
from claimsdb.records import canonical
from claimsdb.records.stream import BATCH_SIZE, keyset_batches

SCHEMA_VERSION = "1.6.0"
ID_PREFIX = "CLAIMSDB"
# The affected entries OSV's ``affected[]`` carries: their ranges and versions are the
# affected ones (an entry "fixed" states the fix among its ranges). The other statuses say
# a component is not (or not yet known to be) affected, which OSV has no entry for; they
# are kept under database_specific.
EXPORTED_STATUSES = ("affected", "fixed")
# Package URL types whose packages OSV names with an ecosystem of its own (OSV 1.6,
# "Defined ecosystems"); another type (github, generic, …) has none, and its entry is
# written without ``package`` (as OSV allows), its Package URL under database_specific.
ECOSYSTEMS = {
    "cargo": "crates.io",
    "composer": "Packagist",
    "conan": "ConanCenter",
    "cran": "CRAN",
    "gem": "RubyGems",
    "golang": "Go",
    "hackage": "Hackage",
    "hex": "Hex",
    "julia": "Julia",
    "maven": "Maven",
    "npm": "npm",
    "nuget": "NuGet",
    "pub": "Pub",
    "pypi": "PyPI",
}
# source kind -> OSV reference type
REFERENCE_TYPES = {
    "primary_disclosure": "REPORT",
    "secondary_report": "ARTICLE",
    "vendor_advisory": "ADVISORY",
    "upstream_issue": "REPORT",
    "upstream_fix": "FIX",
    "reproduction": "EVIDENCE",
    "dataset": "WEB",
    "other": "WEB",
}


def osv_id(case_key: str) -> str:
    return f"{ID_PREFIX}-{case_key}"


def osv_time(moment: dt.datetime) -> str:
    """RFC 3339 in UTC ending in Z, as OSV asks."""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def release_osv_documents(
    release: Release, *, batch_size: int = BATCH_SIZE
) -> Iterator[dict[str, Any]]:
    """The OSV documents of ``release``, in case key order, a batch of cases at a time."""
    entries = (
        ReleaseEntry.objects.filter(release=release, record_kind="case")
        .select_related("revision")
        .only("record_key", "withdrawn", "revision__number", "revision__snapshot")
    )  # fmt: skip
    for batch in keyset_batches(entries, field="record_key", batch_size=batch_size):
        cases = []
        for entry in batch:
            document = canonical.loads(entry.revision.snapshot)
            if document.get("affected"):
                cases.append((entry, document))
        if cases:
            yield from _batch_documents(release, cases)


def _batch_documents(
    release: Release, cases: list[tuple[ReleaseEntry, dict[str, Any]]]
) -> Iterator[dict[str, Any]]:
    component_keys = {
        e["component"] for _, d in cases for e in d["affected"] if isinstance(e, dict)
    }
    components = _released(release, "component", component_keys)
    exported = [
        (entry, document)
        for entry, document in cases
        if any(_purl(components.get(e.get("component"))) for e in document["affected"])
    ]
    if not exported:
        return
    source_keys = {key for _, document in exported for key in cited_sources(document)}
    sources = _released(release, "source", source_keys)
    earlier = ReleaseEntry.objects.filter(
        record_kind="case",
        record_key__in=[entry.record_key for entry, _ in exported],
        release__number__lte=release.number,
    )
    # published: when a release first had the case; modified: when one first had this
    # revision of it (its content as exported). One query each, whatever the batch.
    first_released = dict(
        earlier.values("record_key")
        .annotate(first=Min("release__published_at"))
        .values_list("record_key", "first")
    )
    revision_released = dict(
        earlier.filter(revision_id__in=[entry.revision_id for entry, _ in exported])
        .values("record_key")
        .annotate(first=Min("release__published_at"))
        .values_list("record_key", "first")
    )
    for entry, document in exported:
        yield case_osv(
            document,
            components=components,
            sources=sources,
            modified=revision_released.get(entry.record_key, release.published_at),
            published=first_released.get(entry.record_key, release.published_at),
            withdrawn=entry.withdrawn or document.get("status") == "withdrawn",
            release=release.number,
            revision=entry.revision.number,
        )


def _released(release: Release, kind: str, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The documents of ``kind`` named ``keys`` as ``release`` published them (one query)."""
    keys = sorted(set(keys))
    if not keys:
        return {}
    rows = (
        ReleaseEntry.objects.filter(release=release, record_kind=kind, record_key__in=keys)
        .select_related("revision")
        .only("record_key", "revision__snapshot")
    )
    return {row.record_key: canonical.loads(row.revision.snapshot) for row in rows}


def _purl(component: dict[str, Any] | None) -> str:
    if not component or component.get("status") == "withdrawn":
        return ""
    purl = component.get("purl")
    return purl if isinstance(purl, str) else ""


def case_osv(
    document: dict[str, Any],
    *,
    components: dict[str, dict[str, Any]],
    sources: dict[str, dict[str, Any]],
    modified: dt.datetime,
    published: dt.datetime,
    withdrawn: bool,
    release: int,
    revision: int,
) -> dict[str, Any]:
    """One case as an OSV document (its components and sources as the release has them)."""
    key = document["key"]
    affected = []
    other_statuses = []
    for entry in document["affected"]:
        component = components.get(entry["component"])
        purl = _purl(component)
        if not purl or component is None:
            continue
        if entry["status"] not in EXPORTED_STATUSES:
            other_statuses.append(
                {"component": entry["component"], "purl": purl, "status": entry["status"],
                 "claims": entry["claims"], "note": entry["note"]}
            )  # fmt: skip
            continue
        affected.append(_affected(entry, component, purl))
    osv: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "id": osv_id(key),
        "modified": osv_time(modified),
        "published": osv_time(published),
    }
    if withdrawn:
        osv["withdrawn"] = osv_time(modified)
    related = sorted({osv_id(r["case"]) for r in document.get("relations", [])})
    if related:
        osv["related"] = related
    osv["summary"] = " ".join(document["title"].split())
    osv["details"] = _details(document)
    osv["affected"] = affected
    references = _references(document, sources)
    if references:
        osv["references"] = references
    osv["database_specific"] = {
        "case": key,
        "release": release,
        "revision": revision,
        "status": document.get("status", ""),
        **({"other_statuses": other_statuses} if other_statuses else {}),
    }
    return osv


def _affected(entry: dict[str, Any], component: dict[str, Any], purl: str) -> dict[str, Any]:
    parsed = PackageURL.from_string(purl)
    ecosystem = ECOSYSTEMS.get(str(parsed.type))
    item: dict[str, Any] = {}
    if ecosystem is not None:
        base = PackageURL(type=parsed.type, namespace=parsed.namespace, name=parsed.name)
        item["package"] = {
            "ecosystem": ecosystem,
            "name": _package_name(parsed),
            "purl": str(base.to_string()),
        }
        if entry["ranges"]:
            item["ranges"] = [
                {"type": "ECOSYSTEM", "events": [dict(event) for event in r["events"]]}
                for r in entry["ranges"]
            ]
    if entry["versions"]:
        item["versions"] = list(entry["versions"])
    item["database_specific"] = {
        "component": component["key"],
        "name": component["name"],
        "purl": purl,
        "version_scheme": component.get("version_scheme", ""),
        "status": entry["status"],
        "claims": list(entry["claims"]),
        **({"note": entry["note"]} if entry["note"] else {}),
        # without an OSV ecosystem, the ranges stay in the component's own scheme here
        **({"ranges": entry["ranges"]} if ecosystem is None and entry["ranges"] else {}),
    }
    return item


def _package_name(purl: PackageURL) -> str:
    """The package's name as its OSV ecosystem writes it."""
    namespace, name = purl.namespace, str(purl.name)
    if not namespace:
        return name
    if purl.type == "maven":
        return f"{namespace}:{name}"
    if purl.type == "npm":
        return f"{namespace}/{name}"  # "@scope/name": the namespace keeps its "@"
    return f"{namespace}/{name}"


def _details(document: dict[str, Any]) -> str:
    parts = [document.get("summary", ""), document.get("scope_note", "")]
    if document.get("limits"):
        parts.append("Limits and uncertainty: " + document["limits"])
    return "\n\n".join(part.strip() for part in parts if part and part.strip())


def cited_sources(document: dict[str, Any]) -> list[str]:
    """The sources the case cites — its claims' evidence, then its assessments' evidence
    basis — in the order first cited (as its record page lists them)."""
    keys: dict[str, None] = {}
    for claim in document.get("claims", []):
        for link in claim.get("evidence", []):
            keys.setdefault(link["source"])
    for assessment in document.get("assessments", []):
        for key in assessment.get("evidence_basis", {}).get("sources", []):
            keys.setdefault(key)
    return list(keys)


def _references(
    document: dict[str, Any], sources: dict[str, dict[str, Any]]
) -> list[dict[str, str]]:
    """The sources the case cites that have a URL, each URL once; a source without one (a
    report known only by its title) is not a reference OSV can carry."""
    seen: set[str] = set()
    references = []
    for key in cited_sources(document):
        source = sources.get(key)
        url = source.get("url") if source else None
        if source is None or not isinstance(url, str) or not url or url in seen:
            continue
        seen.add(url)
        references.append({"type": REFERENCE_TYPES.get(source.get("kind", ""), "WEB"), "url": url})
    return references


def iter_osv_array(documents: Iterable[dict[str, Any]]) -> Iterator[str]:
    """The documents as one JSON array, in pieces (one document per piece)."""
    yield "["
    for index, document in enumerate(documents):
        text = json.dumps(document, ensure_ascii=False, indent=2, sort_keys=False)
        yield ("," if index else "") + "\n" + text
    yield "\n]\n"
