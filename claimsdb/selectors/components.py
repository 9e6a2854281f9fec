"""Reads of components: the list, the cases naming one (with what each says of it), the
components related to one, components by key and by name, and a version timeline.

Each read costs a fixed number of queries, whatever the number of components, cases or
ranges: a component page reads one page of the entries naming it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet

from claimsdb import versions
from claimsdb.models import AffectedEntry, Component, ComponentName
from claimsdb.models.components import fold_name
from claimsdb.records.builders import component_document


def component_list(*, kind: str = "", status: str = "") -> QuerySet[Component]:
    """Components by key, of one kind or status if given."""
    rows = Component.objects.order_by("key")
    if kind:
        rows = rows.filter(kind=kind)
    if status:
        rows = rows.filter(status=status)
    return rows


def components_by_key(keys: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The live documents of the named components that exist. One query."""
    keys = set(keys)
    if not keys:
        return {}
    return {c.key: component_document(c) for c in Component.objects.filter(key__in=keys)}


def components_by_name(names: Iterable[str]) -> dict[str, list[str]]:
    """For each name given, the keys of the components whose name or an alias it is
    (compared case-folded, ``Mooncake`` = ``mooncake``), by key; names that match none are
    left out. Several keys for one name are all given, never one guessed. One query, along
    the index of ``ComponentName``, however many components there are."""
    wanted: dict[str, list[str]] = {}
    for name in names:
        wanted.setdefault(fold_name(name), []).append(name)
    wanted.pop("", None)
    if not wanted:
        return {}
    found: dict[str, list[str]] = {}
    rows = (
        ComponentName.objects.filter(name__in=list(wanted))
        .order_by("name", "component__key")
        .values_list("name", "component__key")
    )
    for folded, key in rows:
        for name in wanted[folded]:
            found.setdefault(name, []).append(key)
    return found


def components_by_purl(purls: Iterable[str]) -> dict[str, list[str]]:
    """For each Package URL given, the keys of the components that name it exactly. One
    query."""
    purls = {p for p in purls if p}
    if not purls:
        return {}
    found: dict[str, list[str]] = {}
    for purl, key in (
        Component.objects.filter(purl__in=purls).order_by("key").values_list("purl", "key")
    ):
        found.setdefault(purl, []).append(key)
    return found


def entries_naming(key: str) -> QuerySet[AffectedEntry]:
    """The affected entries naming a component, with their cases, by case key: a page of
    them costs one query (two with its count), along the (component, status, case) index."""
    return (
        AffectedEntry.objects.filter(component__key=key)
        .select_related("case")
        .only(
            "status",
            "ranges",
            "versions",
            "claims",
            "note",
            "case__key",
            "case__title",
            "case__status",
        )
        .order_by("case__key", "position")
    )


def related_to(key: str) -> list[dict[str, Any]]:
    """The components whose documents state a relation to ``key`` (shown as incoming on
    its page): ``{"component", "name", "kind", "note"}``. One query; candidates are found
    by the key's text in their relations, then checked."""
    found = []
    for other, name, relations in (
        Component.objects.filter(relations__icontains=f'"{key}"')
        .order_by("key")
        .values_list("key", "name", "relations")
    ):
        for relation in relations:
            if relation.get("component") == key:
                found.append(
                    {
                        "component": other,
                        "name": name,
                        "kind": relation.get("kind", ""),
                        "note": relation.get("note", ""),
                    }
                )
    return found


def _event(case: str, name: str, status: str) -> dict[str, str]:
    """One case's word at a version: the event (``fixed``; ``version`` for an explicit
    version) and the entry's status, each also in words."""
    return {
        "case": case,
        "event": name,
        "event_words": "named" if name == "version" else name.replace("_", " "),
        "status": status,
        "status_words": status.replace("_", " "),
    }


@dataclass
class TimelinePoint:
    """One version of a component's timeline and what the cases say happens at it."""

    version: str
    events: list[dict[str, str]] = field(default_factory=list)  # {"case", "event", "status"}


FIRST = "the first version"


def version_timeline(scheme: str, entries: Iterable[dict[str, Any]]) -> list[TimelinePoint]:
    """The versions the entries name (range events and explicit versions), in the order of
    the component's scheme, each with what each case says there. ``entries`` are affected
    entries with their ``case``. Built in memory from the entries given (a page of them)."""
    points: dict[str, TimelinePoint] = {}
    for entry in entries:
        case = entry["case"]
        for range_ in entry.get("ranges", []):
            for event in range_.get("events", []):
                for name, version in event.items():
                    shown = FIRST if name == "introduced" and version == "0" else version
                    points.setdefault(shown, TimelinePoint(shown)).events.append(
                        _event(case, name, entry["status"])
                    )
        for version in entry.get("versions", []):
            points.setdefault(version, TimelinePoint(version)).events.append(
                _event(case, "version", entry["status"])
            )

    def order(point: TimelinePoint) -> tuple[int, Any]:
        if point.version == FIRST:
            return (-1, "")
        return versions.sort_key(scheme, point.version)

    return sorted(points.values(), key=order)
